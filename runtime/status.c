/* SPDX-License-Identifier: MIT */
/* Readable names for NVMe statuses (NVMe base spec 4.6.1.2) and gpuos
 * request statuses (gpuos/abi.h), for messages on the host and the GPU. */
#include "gpuos/abi.h"
#include "gpuos/nvme.h"

GPUOS_HD const char *gpuos_nvme_status_name(uint16_t st)
{
	uint8_t sct = gpuos_nvme_status_sct(st), sc = gpuos_nvme_status_sc(st);

	if (sct == GPUOS_NVME_SCT_GENERIC) {
		switch (sc) {
		case GPUOS_NVME_SC_SUCCESS: return "Successful Completion";
		case GPUOS_NVME_SC_INVALID_OPCODE: return "Invalid Command Opcode";
		case GPUOS_NVME_SC_INVALID_FIELD: return "Invalid Field in Command";
		case GPUOS_NVME_SC_CID_CONFLICT: return "Command ID Conflict";
		case GPUOS_NVME_SC_DATA_XFER_ERROR: return "Data Transfer Error";
		case GPUOS_NVME_SC_POWER_LOSS_ABORT: return "Commands Aborted due to Power Loss Notification";
		case GPUOS_NVME_SC_INTERNAL: return "Internal Error";
		case GPUOS_NVME_SC_ABORT_REQ: return "Command Abort Requested";
		case GPUOS_NVME_SC_ABORT_SQ_DELETED: return "Command Aborted due to SQ Deletion";
		case GPUOS_NVME_SC_INVALID_NS: return "Invalid Namespace or Format";
		case GPUOS_NVME_SC_CMD_SEQ_ERROR: return "Command Sequence Error";
		case GPUOS_NVME_SC_INVALID_PRP_OFFSET: return "PRP Offset Invalid";
		case GPUOS_NVME_SC_LBA_RANGE: return "LBA Out of Range";
		case GPUOS_NVME_SC_CAP_EXCEEDED: return "Capacity Exceeded";
		case GPUOS_NVME_SC_NS_NOT_READY: return "Namespace Not Ready";
		default: return "Generic Command Status (unknown code)";
		}
	}
	if (sct == GPUOS_NVME_SCT_CMD_SPECIFIC) {
		switch (sc) {
		case GPUOS_NVME_SC_CQ_INVALID: return "Completion Queue Invalid";
		case GPUOS_NVME_SC_QID_INVALID: return "Invalid Queue Identifier";
		case GPUOS_NVME_SC_QUEUE_SIZE: return "Invalid Queue Size";
		case GPUOS_NVME_SC_INVALID_INT_VECTOR: return "Invalid Interrupt Vector";
		case GPUOS_NVME_SC_INVALID_LOG_PAGE: return "Invalid Log Page";
		case GPUOS_NVME_SC_INVALID_QUEUE_DELETION: return "Invalid Queue Deletion";
		case GPUOS_NVME_SC_FEATURE_NOT_SAVEABLE: return "Feature Identifier Not Saveable";
		default: return "Command Specific Status (unknown code)";
		}
	}
	if (sct == GPUOS_NVME_SCT_MEDIA) {
		switch (sc) {
		case GPUOS_NVME_SC_WRITE_FAULT: return "Write Fault";
		case GPUOS_NVME_SC_UNRECOVERED_READ: return "Unrecovered Read Error";
		default: return "Media and Data Integrity Error (unknown code)";
		}
	}
	if (sct == GPUOS_NVME_SCT_PATH)
		return "Path Related Status";
	if (sct == GPUOS_NVME_SCT_VENDOR)
		return "Vendor Specific Status";
	return "Reserved Status Code Type";
}

GPUOS_HD const char *gpuos_nvme_admin_opc_name(uint8_t opc)
{
	switch (opc) {
	case GPUOS_NVME_ADMIN_DELETE_SQ: return "Delete I/O Submission Queue";
	case GPUOS_NVME_ADMIN_CREATE_SQ: return "Create I/O Submission Queue";
	case GPUOS_NVME_ADMIN_GET_LOG_PAGE: return "Get Log Page";
	case GPUOS_NVME_ADMIN_DELETE_CQ: return "Delete I/O Completion Queue";
	case GPUOS_NVME_ADMIN_CREATE_CQ: return "Create I/O Completion Queue";
	case GPUOS_NVME_ADMIN_IDENTIFY: return "Identify";
	case GPUOS_NVME_ADMIN_ABORT: return "Abort";
	case GPUOS_NVME_ADMIN_SET_FEATURES: return "Set Features";
	case GPUOS_NVME_ADMIN_GET_FEATURES: return "Get Features";
	default: return "unknown admin command";
	}
}

GPUOS_HD const char *gpuos_fatal_name(uint32_t why)
{
	switch (why & 0xffu) {
	case GPUOS_RT_FATAL_NONE: return "not failed";
	case GPUOS_RT_FATAL_CFS: return "CSTS.CFS on a controller the runtime cannot reset";
	case GPUOS_RT_FATAL_GONE: return "CSTS reads all ones: the controller is gone";
	case GPUOS_RT_FATAL_NOT_STOPPED: return "reset: CSTS.RDY stayed 1 for CAP.TO after CC.EN = 0";
	case GPUOS_RT_FATAL_NOT_READY: return "reset: CSTS.RDY did not come back within CAP.TO (or CFS)";
	case GPUOS_RT_FATAL_ADMIN: return "reset: an admin command failed or went unanswered within CAP.TO";
	case GPUOS_RT_FATAL_STUCK: return "an aborted command never completed, and the controller cannot be reset";
	default: return "unknown reason";
	}
}

GPUOS_HD const char *gpuos_status_name(uint32_t st)
{
	switch (st) {
	case GPUOS_ST_OK: return "ok";
	case GPUOS_ST_BAD_OPCODE: return "unknown or unserved opcode";
	case GPUOS_ST_BAD_RANGE: return "range past the end";
	case GPUOS_ST_BAD_DST: return "destination null or outside registered memory";
	case GPUOS_ST_OVERFLOW: return "offset + length overflows or length too large";
	case GPUOS_ST_NVME: return "the controller reported an error";
	case GPUOS_ST_TIMEOUT: return "command timed out";
	case GPUOS_ST_CTRL_FATAL: return "controller failed (CSTS.CFS, or it could not be reset)";
	case GPUOS_ST_CTRL_RESET: return "controller reset under the request (it stopped answering); retry";
	case GPUOS_ST_DUP_CQE: return "the controller completed a command twice: its bytes cannot be trusted";
	case GPUOS_ST_GONE: return "the service is gone (it closed the connection, or did not answer in time)";
	case GPUOS_ST_FULL: return "mailbox full";
	case GPUOS_ST_DENIED: return "permission denied";
	case GPUOS_ST_NOENT: return "no such file or directory";
	case GPUOS_ST_NOTDIR: return "not a directory";
	case GPUOS_ST_LOOP: return "too many levels of symbolic links";
	case GPUOS_ST_CORRUPT: return "corrupt metadata";
	case GPUOS_ST_UNSUPPORTED: return "unsupported feature";
	case GPUOS_ST_BAD_HANDLE: return "bad handle";
	case GPUOS_ST_NOSPC: return "out of space in a runtime table";
	case GPUOS_ST_STOPPING: return "runtime is stopping";
	case GPUOS_ST_BAD_FLAGS: return "invalid flags";
	case GPUOS_ST_ISDIR: return "is a directory";
	case GPUOS_ST_NAMETOOLONG: return "file name too long";
	case GPUOS_ST_IO: return "metadata could not be read from the device";
	case GPUOS_ST_NO_FILES: return "this runtime serves no files (no metadata queue)";
	default: return "unknown status";
	}
}
