/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_internal.h - the system of include/gpuos/host.h from inside:
 * struct gpuos_sys and what its files share, one file per idea. The room
 * uses the controllers of boot/ctrl/ (ctrl.h, bringup.h), which know
 * nothing of it. Within it the calls run one way, down this list: a file
 * calls functions of the files below it only, never of one above
 * (tests/tools/check_arrows.py keeps the list, SYS_LAYERS, and checks it
 * from the functions each file defines and names):
 *   sys_group.c    several runtimes on one device's controllers (a group)
 *   sys.c          boot, identify and shutdown as named steps; info and statistics
 *   sys_load.c     loading from host code: models and files into that memory
 *   sys_dequant.c  quantised tensors into F32, F16 or BF16 (the GPU kernel or CPU threads)
 *   sys_desc.c     the descriptor the runtime reads
 *   sys_ctrl.c     the controllers: bring-up, queue counts, queue pairs, SMART log, shutdown
 *   sys_mem.c      DMA and VRAM regions, the shared-memory segment, freeing them; where they are
 *   sys_register.c the caller's own memory, and memory of the system's, as destinations
 *   sys_app.c      app images (gpuos run) and GPU clients
 *   sys_park.c     parking and resuming (gpuos_park): a runtime, or a group's on one GPU
 *   sys_run.c      starting and stopping the runtime (the GPU launch or host mode)
 *   sys_threads.c  the host-mode threads (the runtime's warps on CPU threads)
 *   sys_cmd.c      the runtime's command word: run, park, stop
 *   sys_client.c   a client of a service (gpuos_connect): its mailbox and its memory
 *   sys_drain.c    the load state's locks, and waiting for the stream-ordered loads
 *   sys_error.c    the calling thread's reason (gpuos_sys_error, gpuos_sys_fail)
 *   sys_plan.c     the geometry, planned: pure, unit-tested (sys_plan.h)
 * What a lower file needs of a higher one's work it is handed, or the
 * shared piece lives low: the command word (sys_cmd.c) under the threads
 * that stop on it; the group's park above start and stop (sys_park.c);
 * the reason and the wait for loads (sys_error.c, sys_drain.c) under
 * everything that reports or frees; where the mailbox and heap are with
 * the memory (sys_mem.c), under the loads that post there.
 * An array ("emu:IMG,ssds=N", "pci:A+B"; docs/design.md, "Arrays of SSDs")
 * is brought up controller by controller; the runtime stripes over all of
 * them.
 */
#ifndef GPUOS_BOOT_SYS_INTERNAL_H
#define GPUOS_BOOT_SYS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuos/host.h"
#include "gpuos/internal/rt.h"
#include "../ctrl/bringup.h"
#include "../ctrl/ctrl.h"
#include "../gpu.h"
#include "sys_plan.h"

struct sys_model; /* a model opened once for many loads (boot/sys/sys_load.c) */

struct gpuos_sys {
	struct gpuos_boot_opts opts;
	/* A client of a service (gpuos_connect, boot/sys/sys_client.c), not a
	 * runtime: its mailbox, share and memory are the connection's, and
	 * the calls that take one dispatch there. NULL for a booted runtime. */
	struct sys_client *client;
	/* A group's (sys_group.c): the group, and the runtime that owns the
	 * controllers (the first; its nvme[], nvme_up and ctrl are the ones in
	 * use), or NULL where s is that runtime or alone */
	struct gpuos_group *group;
	struct gpuos_sys *owner;
	pthread_mutex_t admin_lock;   /* the host's admin queues (boot's commands), in the owner */
	uint32_t admin_dead;          /* bit m: controller m left an admin command unanswered */
	struct gpuos_info info;
	struct gpuos_gpu *gpu;
	struct gpuos_ctrl *ctrl;
	struct gpuos_nvme_dev nvme[GPUOS_CTRL_MAX_MEMBERS]; /* one per controller of the device */
	uint32_t nctrl;           /* controllers (an array's members), nvme[0..nctrl) */
	uint32_t nvme_up;         /* of them enabled: nvme[0..nvme_up) */
	uint32_t nq[GPUOS_CTRL_MAX_MEMBERS]; /* queue pairs created on each: qids 1..nq[m] */
	/* The namespace served and the limits every controller keeps */
	struct gpuos_plan_device dev;
	uint32_t io_queues;       /* I/O queue pairs granted: the fewest of any controller */
	struct gpuos_plan plan;   /* gpuos_boot's geometry */
	/* Each controller's SMART log at boot, where it keeps no counters we
	 * read directly (pci:): gpuos_sys_ctrl_stats reports what changed since */
	struct gpuos_nvme_smart_log smart0[GPUOS_CTRL_MAX_MEMBERS];
	uint32_t have_smart0;     /* bit m: smart0[m] read */
	/* I/O queue pairs: the service warps', then the metadata warp's (one per controller) */
	struct gpuos_dma sq[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL], cq[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL];
	struct gpuos_dma bounce, prp, ctl, state, mbox_dev, dev_heap;
	struct gpuos_dma cmd;        /* on the GPU: the VRAM copy of ctl->cmd the runtime polls */
	struct gpuos_dma doors;      /* on the GPU: the VRAM copy of the clients' doors (rt.h) */
	uint32_t doors_open;         /* struct gpuos_rt_doors' open, as published */
	struct gpuos_dma files, meta_bounce, meta_prp;
	struct gpuos_dma admin;      /* struct gpuos_rt_admin per controller: the runtime's recovery */
	/* and their doorbells in runtime space, as the controller placed them */
	uint64_t sq_db[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL], cq_db[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL];
	struct gpuos_rt_desc *desc;   /* host copy */
	struct sys_user_region {      /* the caller's own memory (gpuos_sys_register, boot/sys/sys_register.c) */
		void *ptr;
		size_t len;
		uint64_t iova;            /* where the controller reaches it (mapped), else 0 */
		uint32_t flags;           /* GPUOS_REGISTER_* */
		int pinned, mapped;       /* registered with the GPU; mapped for the controller */
		int owned;                /* made by gpuos_sys_alloc: freed with the region */
		uint32_t client;          /* 0, or the service's client (1-based) whose own memory it is
		                           * (gpuos_sys_client_register): named by its requests alone */
		void *map;                /* that client's memfd, mapped here: unmapped with the region */
		uint64_t ipc;             /* that client's VRAM, opened here: closed with the region */
	} user[GPUOS_SYS_USER_REGIONS];
	uint32_t nuser;
	struct sys_load {             /* loading from host code (boot/sys/sys_load.c) */
		pthread_mutex_t lock;     /* the scratch buffer and the checks */
		char *scratch;            /* paths, names and answers: gpuos_sys_alloc'ed */
		size_t scratch_len;
		pthread_mutex_t async_lock; /* the stream-ordered loads: */
		pthread_cond_t idle;      /* signalled when pending drops */
		uint32_t pending;
		int async_err;            /* the first failure since gpuos_sys_sync */
		char async_why[512];
		int inited;
		/* models opened once for many loads (gpuos_model_open_host), under lock */
		struct sys_model **models;
		uint32_t nmodels, models_cap;
		uint32_t next_id;         /* ids are never reused: a closed one stays unknown */
		uint64_t tick;            /* the last use of each, to choose whose file handle goes */
	} load;
	/* shared segment: header, mailbox, heap */
	int shm_fd;                   /* the segment (memfd), kept for clients of a service */
	void *shm;
	size_t shm_len;
	uint64_t shm_rt;              /* runtime-space address of the segment */
	int shm_registered;
	int area_fd[GPUOS_RT_MAX_CLIENTS]; /* a service's client areas (share k): a memfd each, mapped over
	                              * the segment's pages there, so a client maps its own only */
	uint32_t area_epoch[GPUOS_RT_MAX_CLIENTS];
	/* GPU clients' areas (plan.ngpu_clients, after the host clients'): on a
	 * GPU each is a VRAM allocation of its own mapped into one reserved
	 * range, area_fd its exported descriptor (gpuos_gpu_vmm_*); in host
	 * mode a memfd each, mapped into one reserved host range. */
	uint64_t garea_rt;            /* runtime-space address of the first */
	void *garea;                  /* host mode: the same range */
	uint64_t garea_handle[GPUOS_RT_MAX_CLIENTS]; /* on a GPU: area k's allocation, at [k] */
	uint64_t heap_iova;           /* the client heap as the controller sees it (heap_mapped) */
	int heap_mapped;
	/* host mode */
	pthread_t *threads;
	int running;
};

/* A group (sys_group.c boots it and shuts it down; sys_park.c parks its
 * runtimes on one GPU together). */
struct gpuos_group {
	uint32_t n;
	struct gpuos_sys *sys[GPUOS_GROUP_MAX];   /* [0] owns the controllers */
	pthread_mutex_t park_lock;
	uint32_t parks[GPUOS_GROUP_MAX];          /* parks outstanding on each (they nest) */
	uint32_t was_running[GPUOS_GROUP_MAX];    /* running when its first park came */
};

/* The control block the runtime shares with the host (rt.h). */
static inline struct gpuos_rt_ctl *gpuos_sys_ctl(struct gpuos_sys *s)
{
	return (struct gpuos_rt_ctl *)s->ctl.host;
}

/* The system whose controllers s uses: s itself, or its group's owner. */
static inline struct gpuos_sys *gpuos_sys_ctrls(struct gpuos_sys *s)
{
	return s->owner ? s->owner : s;
}

/* ---- sys.c: the steps of boot, for sys_group.c ------------------------------------ */
/* A system for o, not yet booted (the options checked). 0 or -errno. */
int gpuos_sys_new(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen);
/* The GPU (s->opts.gpu, or host mode), with the runtime image loaded. */
int gpuos_sys_open_gpu(struct gpuos_sys *s, char *err, size_t errlen);
/* The controllers up, the queues granted for in->runtimes, the plan. */
int gpuos_sys_boot_device(struct gpuos_sys *s, uint32_t runtimes, char *err, size_t errlen);
/* On a planned system (its own controllers or its owner's): the queue
 * pairs, buffers, shared segment, client memory and descriptor; then
 * what gpuos_sys_info reports. Not started. */
int gpuos_sys_boot_runtime(struct gpuos_sys *s, char *err, size_t errlen);
/* Free what s holds (stopping its runtime first); the controllers only
 * where s owns them. */
void gpuos_sys_teardown(struct gpuos_sys *s);

/* ---- sys_ctrl.c: the controllers ------------------------------------------------- */
/* Errors name the controller of an array they come from. */
/* Open the device, enable every controller, plan what they have in common (s->dev). */
int gpuos_sys_bring_up(struct gpuos_sys *s, char *err, size_t errlen);
/* Ask every controller for `want` I/O queue pairs (Set Features, or its
 * grant hook); s->io_queues = the fewest granted. */
int gpuos_sys_set_queues(struct gpuos_sys *s, uint32_t want, char *err, size_t errlen);
/* The service warps' and the metadata warp's queue pairs (s->plan), each
 * allocated and created in turn, or made by the controller itself (its
 * queues hook, boot/ctrl/ctrl.h); their doorbells into s->sq_db, s->cq_db. */
int gpuos_sys_create_queues(struct gpuos_sys *s, char *err, size_t errlen);
/* Delete every controller's I/O queue pairs, newest first. 0 or the first error. */
int gpuos_sys_delete_queues(struct gpuos_sys *s, char *err, size_t errlen);
/* CC.SHN on every controller that is up. 0 or the first error. */
int gpuos_sys_shutdown_ctrls(struct gpuos_sys *s, char *err, size_t errlen);
/* Controller m's SMART / health log through the host's admin queue. */
int gpuos_sys_smart_read(struct gpuos_sys *s, uint32_t m, struct gpuos_nvme_smart_log *out);

/* ---- sys_mem.c: memory ----------------------------------------------------------- */
/* Queue pair i's SQ and CQ (s->plan's depth), contiguous and page aligned
 * (CAP.CQR), mapped for the controller. 0 or -errno. */
int gpuos_sys_alloc_qpair(struct gpuos_sys *s, uint32_t i);
/* Bounce buffers and PRP lists, the command slots' and the metadata warp's. */
int gpuos_sys_alloc_buffers(struct gpuos_sys *s, char *err, size_t errlen);
/* The shared segment: header, mailbox, client heap (include/gpuos/host.h). */
int gpuos_sys_make_shm(struct gpuos_sys *s, char *err, size_t errlen);
/* What clients reach beside the shared segment: the mailbox in VRAM
 * (mbox_vram) and VRAM client memory (dev_heap_bytes), on the GPU; and the
 * control block. */
int gpuos_sys_alloc_client_mem(struct gpuos_sys *s, char *err, size_t errlen);
/* len bytes of kind for the runtime, not mapped for the controller; "allocate
 * WHAT: reason" in err. */
int gpuos_sys_alloc_rt(struct gpuos_sys *s, size_t len, enum gpuos_mem_kind kind, struct gpuos_dma *out,
		       const char *what, char *err, size_t errlen);
/* Free every region (what is not there is skipped); the shared segment
 * after the controllers are shut down: the client heap stays mapped for
 * them until then. */
void gpuos_sys_free_mem(struct gpuos_sys *s);
void gpuos_sys_free_shm(struct gpuos_sys *s);
/* Undo every gpuos_sys_register (the runtime stopped). */
void gpuos_sys_user_free(struct gpuos_sys *s);
/* Every region client k + 1 registered (gpuos_sys_client_register) goes;
 * the caller has parked the runtime. */
void gpuos_sys_client_regions_drop(struct gpuos_sys *s, uint32_t k);

/* ---- a client of a service (boot/sys/sys_client.c) ---- */
/* The runtime address of [p, p + len): in a range the client registered
 * (or its share, where share): 0, else -EFAULT. */
int gpuos_conn_rt(const struct gpuos_sys *s, const void *p, uint64_t len, int share, uint64_t *rt);
int gpuos_conn_gone(const struct gpuos_sys *s);
struct gpuos_mbox *gpuos_conn_mbox(const struct gpuos_sys *s);
void *gpuos_conn_share(const struct gpuos_sys *s, uint64_t *rt, uint64_t *len);
/* gpuos_sys_alloc, _free, _register (fd >= 0: gpuos_sys_register_fd),
 * _unregister and gpuos_shutdown of a client. */
int gpuos_conn_alloc(struct gpuos_sys *s, size_t len, uint32_t flags, void **ptr);
int gpuos_conn_free(struct gpuos_sys *s, void *ptr);
int gpuos_conn_register(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags, int fd, uint64_t fd_off);
int gpuos_conn_unregister(struct gpuos_sys *s, void *ptr);
int gpuos_conn_shutdown(struct gpuos_sys *s);

/* ---- sys_load.c: loading from host code ---------------------------------------- */
/* Wait for the loads still to come, then close the models kept (their
 * memory; the handles go with the runtime or the client). */
void gpuos_sys_load_fini(struct gpuos_sys *s);

/* ---- sys_drain.c: the load state ------------------------------------------------- */
void gpuos_sys_load_init(struct gpuos_sys *s);
/* Wait for the stream-ordered loads still to come (before the runtime stops,
 * or memory they may write goes). */
void gpuos_sys_load_drain(struct gpuos_sys *s);

/* ---- sys_error.c: the calling thread's reason ------------------------------------ */
#define GPUOS_SYS_WHY_LEN 512u
/* Set the calling thread's reason (gpuos_sys_error) and return r: for every
 * call of host.h that reports through it ("" clears it). */
int gpuos_sys_fail(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- sys_desc.c: the descriptor -------------------------------------------------- */
/* Write s->desc from the plan and the regions, allocating what the runtime
 * alone uses (its command word, admin table, state, files region). */
int gpuos_sys_build_desc(struct gpuos_sys *s, char *err, size_t errlen);

/* ---- sys_cmd.c: the command word ------------------------------------------------ */
/* Tell the runtime to run, park or stop (GPUOS_RT_CMD_*). */
int gpuos_sys_set_cmd(struct gpuos_sys *s, uint32_t cmd);

/* ---- sys_run.c: the runtime's life ----------------------------------------------- */
/* Start it (the kernel, or host-mode threads); stop or park it and wait
 * until every warp has left. gpuos_park and gpuos_resume (host.h,
 * sys_park.c) take a group's runtimes on the same GPU along. */
int gpuos_sys_start(struct gpuos_sys *s, char *err, size_t errlen);
int gpuos_sys_stop(struct gpuos_sys *s, uint32_t cmd, char *err, size_t errlen);

/* ---- sys_threads.c: host mode ---------------------------------------------------- */
/* The runtime's warps plus the metadata warp, one thread each. */
uint32_t gpuos_sys_rt_threads(const struct gpuos_rt_desc *d);
/* Start them (cmd is RUN already); on failure, those started are told to
 * stop and joined. 0 or -ENOMEM / -EAGAIN. */
int gpuos_sys_threads_start(struct gpuos_sys *s, char *err, size_t errlen);
/* Join them (after cmd PARK or STOP). */
void gpuos_sys_threads_join(struct gpuos_sys *s);

#endif /* GPUOS_BOOT_SYS_INTERNAL_H */
