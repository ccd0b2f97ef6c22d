/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_mps.c - how `gpuos boot` settles CUDA MPS (boot/mps.c),
 * with no GPU and no NVIDIA driver: whether a daemon answers at a pipe
 * directory (fake ones: a socket that listens, one a dead daemon left, a
 * FIFO with and without a reader, a file, nothing), starting one (fake
 * control programs: one that makes its endpoint, one that fails, one that
 * makes none, one that is not there), the line boot prints for each state,
 * and the default control socket's rule (boot/service.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpuos/host.h"

static char tmp[256];

static void mk_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/gpuos-mps-test.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void rm_tmp(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

/* How long a start, stop or wait may take where it is to succeed or fail
 * on its own (the fake control programs answer at once): a hang guard, not
 * a bound on speed (issue 35: a shell script's start takes seconds on a
 * loaded machine). The waits meant to run out stay short (300 ms, 200 ms). */
#define MPS_WAIT_MS 60000u

TestSuite(mps, .init = mk_tmp, .fini = rm_tmp);

/* A socket bound at path; listening unless dead, else closed at once (what
 * a daemon that ended leaves behind). Returns the listening fd or -1. */
static int unix_socket(const char *path, int dead)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", path, strerror(errno));
	if (dead) {
		close(fd);
		return -1;
	}
	cr_assert_eq(listen(fd, 4), 0);
	return fd;
}

static const char *at(const char *name)
{
	static char p[4][300];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tmp, name);
	return p[k];
}

Test(mps, probe_nothing_there)
{
	cr_assert_eq(gpuos_mps_probe(tmp), 0, "an empty directory");
	cr_assert_eq(gpuos_mps_probe(at("missing")), 0, "no directory");
}

Test(mps, probe_a_listening_socket)
{
	int fd;
	mkdir(at("pipe"), 0755);
	fd = unix_socket(at("pipe/control"), 0);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 1);
	close(fd);
	/* the same file, nobody behind it any more */
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 0);
}

Test(mps, probe_a_dead_daemons_socket)
{
	mkdir(at("pipe"), 0755);
	unix_socket(at("pipe/control"), 1);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 0);
}

Test(mps, probe_a_fifo)
{
	int rd;
	mkdir(at("pipe"), 0755);
	cr_assert_eq(mkfifo(at("pipe/control"), 0600), 0);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 0, "a FIFO nobody reads");
	rd = open(at("pipe/control"), O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 1, "a FIFO with a reader");
	close(rd);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 0, "its reader gone");
}

Test(mps, probe_a_file_is_no_daemon)
{
	FILE *f;
	mkdir(at("pipe"), 0755);
	f = fopen(at("pipe/control"), "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(gpuos_mps_probe(at("pipe")), 0);
}

Test(mps, probe_a_path_too_long)
{
	char dir[200];
	memset(dir, 'a', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = 0;
	cr_assert_eq(gpuos_mps_probe(dir), -ENAMETOOLONG);
	cr_assert_eq(gpuos_mps_probe(""), -ENAMETOOLONG);
}

/* A fake control program at tmp/NAME: body runs with $1 its argument. */
static const char *fake(const char *name, const char *body)
{
	const char *p = at(name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	cr_assert_eq(chmod(p, 0755), 0);
	return p;
}

/* What a daemon does: its endpoint, a FIFO held open by a process that
 * forked away (its pid in the log directory), the environment it got. */
static const char daemon_body[] =
	"if [ \"$1\" != -d ]; then read -r cmd; echo \"$cmd $CUDA_MPS_PIPE_DIRECTORY\" > \"$CUDA_MPS_LOG_DIRECTORY/got\";\n"
	"  kill $(cat \"$CUDA_MPS_LOG_DIRECTORY/pid\"); exit 0; fi\n"
	"echo \"$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY\" > \"$CUDA_MPS_LOG_DIRECTORY/env\"\n"
	"mkfifo \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
	"(exec 3<>\"$CUDA_MPS_PIPE_DIRECTORY/control\"; exec sleep 30) > /dev/null 2>&1 &\n"
	"echo $! > \"$CUDA_MPS_LOG_DIRECTORY/pid\"\n";

static void kill_daemon(void)
{
	FILE *f = fopen(at("log/pid"), "r");
	int pid = 0;
	if (f && fscanf(f, "%d", &pid) == 1 && pid > 0)
		kill(pid, SIGKILL);
	if (f)
		fclose(f);
}

Test(mps, start_a_daemon)
{
	char err[256] = "", env[700] = "", want[700];
	const char *prog = fake("mps-control", daemon_body);
	FILE *f;
	int r = gpuos_mps_start(prog, at("run/pipe"), at("log"), MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, 0, "start: %d %s", r, err);
	cr_assert_eq(gpuos_mps_probe(at("run/pipe")), 1, "it answers");
	f = fopen(at("log/env"), "r");
	cr_assert_not_null(f, "the program ran with the log directory made");
	cr_assert_not_null(fgets(env, sizeof(env), f));
	fclose(f);
	snprintf(want, sizeof(want), "%s %s\n", at("run/pipe"), at("log"));
	cr_assert_str_eq(env, want, "it got both directories");
	kill_daemon();
}

Test(mps, stop_the_daemon_started)
{
	struct gpuos_mps m;
	char err[256] = "", got[700] = "", want[700];
	FILE *f;
	int r;
	memset(&m, 0, sizeof(m));
	snprintf(m.dir, sizeof(m.dir), "%s", at("pipe"));
	snprintf(m.log_dir, sizeof(m.log_dir), "%s", at("log"));
	setenv("GPUOS_MPS_CONTROL", fake("mps-control", daemon_body), 1);
	r = gpuos_mps_start(getenv("GPUOS_MPS_CONTROL"), m.dir, m.log_dir, MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	m.state = GPUOS_MPS_JOINED;
	cr_assert_eq(gpuos_mps_stop(&m, MPS_WAIT_MS, err, sizeof(err)), 0);
	cr_assert_eq(access(at("log/got"), F_OK), -1, "a daemon it only joined is left alone");
	m.state = GPUOS_MPS_STARTED;
	r = gpuos_mps_stop(&m, MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	f = fopen(at("log/got"), "r");
	cr_assert_not_null(f, "the control program was run");
	cr_assert_not_null(fgets(got, sizeof(got), f));
	fclose(f);
	snprintf(want, sizeof(want), "quit %s\n", m.dir);
	cr_assert_str_eq(got, want, "it was told quit, at the daemon's pipe directory");
	cr_assert_eq(gpuos_mps_wait_gone(m.dir, MPS_WAIT_MS), 0, "the daemon answers no more");
	cr_assert_eq(gpuos_mps_probe(m.dir), 0);
}

/* A daemon that takes quit and stays while its client (the service) lives:
 * the control program does not come back; the stop reports it as taking
 * the quit, and gpuos_mps_wait_gone waits for its end, or says it has not
 * come. */
Test(mps, stop_a_daemon_that_ends_later)
{
	struct gpuos_mps m;
	char err[256] = "";
	int r;
	memset(&m, 0, sizeof(m));
	snprintf(m.dir, sizeof(m.dir), "%s", at("pipe"));
	snprintf(m.log_dir, sizeof(m.log_dir), "%s", at("log"));
	setenv("GPUOS_MPS_CONTROL", fake("mps-control", "if [ \"$1\" != -d ]; then read -r cmd; exec sleep 30; fi\n"
					 "mkfifo \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
					 "(exec 3<>\"$CUDA_MPS_PIPE_DIRECTORY/control\"; exec sleep 30) > /dev/null 2>&1 &\n"
					 "echo $! > \"$CUDA_MPS_LOG_DIRECTORY/pid\"\n"), 1);
	r = gpuos_mps_start(getenv("GPUOS_MPS_CONTROL"), m.dir, m.log_dir, MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	m.state = GPUOS_MPS_STARTED;
	r = gpuos_mps_stop(&m, 300, err, sizeof(err));
	cr_assert_eq(r, 0, "a quit still being taken is no failure: %d %s", r, err);
	cr_assert_eq(gpuos_mps_wait_gone(m.dir, 300), -ETIMEDOUT, "the daemon still answers");
	kill_daemon();
	cr_assert_eq(gpuos_mps_wait_gone(m.dir, MPS_WAIT_MS), 0, "gone once it ended");
}

/* A control program that fails at once: the stop says how. */
Test(mps, stop_with_a_control_program_that_fails)
{
	struct gpuos_mps m;
	char err[256] = "";
	memset(&m, 0, sizeof(m));
	snprintf(m.dir, sizeof(m.dir), "%s", at("pipe"));
	snprintf(m.log_dir, sizeof(m.log_dir), "%s", at("log"));
	setenv("GPUOS_MPS_CONTROL", fake("mps-control", "exit 4"), 1);
	m.state = GPUOS_MPS_STARTED;
	cr_assert_eq(gpuos_mps_stop(&m, MPS_WAIT_MS, err, sizeof(err)), -EIO);
	cr_assert(strstr(err, "exit status 4"), "%s", err);
}

Test(mps, start_a_program_that_fails)
{
	char err[256] = "";
	const char *prog = fake("mps-control", "exit 3");
	int r = gpuos_mps_start(prog, at("pipe"), at("log"), MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, -EIO);
	cr_assert(strstr(err, "exited with status 3") && strstr(err, "control.log"), "%s", err);
}

Test(mps, start_a_daemon_that_never_answers)
{
	char err[256] = "";
	const char *prog = fake("mps-control", "exit 0");
	int r = gpuos_mps_start(prog, at("pipe"), at("log"), 200, err, sizeof(err));
	cr_assert_eq(r, -EIO);
	cr_assert(strstr(err, "answers at no") != NULL, "%s", err);
}

Test(mps, start_no_such_program)
{
	char err[256] = "";
	int r = gpuos_mps_start(at("nvidia-cuda-mps-control-missing"), at("pipe"), at("log"), MPS_WAIT_MS, err, sizeof(err));
	cr_assert_eq(r, -ENOENT);
	cr_assert(strstr(err, "not installed") != NULL, "%s", err);
}

Test(mps, setup_in_host_mode_touches_nothing)
{
	struct gpuos_mps m;
	char text[512];
	setenv("CUDA_MPS_PIPE_DIRECTORY", at("pipe"), 1);
	setenv("GPUOS_MPS_CONTROL", fake("mps-control", daemon_body), 1);
	gpuos_mps_setup(&m, 1, 0);
	cr_assert_eq(m.state, GPUOS_MPS_HOST);
	cr_assert_str_eq(gpuos_mps_text(&m, text, sizeof(text)), "none (host mode)");
	cr_assert_str_eq(gpuos_mps_state_name(m.state), "host");
	cr_assert_eq(access(at("pipe"), F_OK), -1, "no daemon started, no directory made");
}

Test(mps, the_line_of_each_state)
{
	struct gpuos_mps m;
	char text[512];
	memset(&m, 0, sizeof(m));
	snprintf(m.dir, sizeof(m.dir), "/tmp/nvidia-mps");
	snprintf(m.log_dir, sizeof(m.log_dir), "/tmp/nvidia-log");
	m.state = GPUOS_MPS_OFF;
	cr_assert_str_eq(gpuos_mps_text(&m, text, sizeof(text)), "off (--no-mps)");
	m.state = GPUOS_MPS_JOINED;
	cr_assert_str_eq(gpuos_mps_text(&m, text, sizeof(text)), "joined the daemon at /tmp/nvidia-mps");
	m.state = GPUOS_MPS_STARTED;
	cr_assert_str_eq(gpuos_mps_text(&m, text, sizeof(text)),
			 "started a daemon at /tmp/nvidia-mps (its logs in /tmp/nvidia-log)");
	m.state = GPUOS_MPS_FAILED;
	snprintf(m.why, sizeof(m.why), "nvidia-cuda-mps-control is not installed");
	cr_assert(strstr(gpuos_mps_text(&m, text, sizeof(text)), "warning: nvidia-cuda-mps-control is not installed") ==
		  text + strlen("none ("), "%s", text);
	cr_assert_str_eq(gpuos_mps_state_name(GPUOS_MPS_STARTED), "started");
	cr_assert_str_eq(gpuos_mps_state_name(GPUOS_MPS_FAILED), "failed");
}

/* ---- the default control socket --------------------------------------------------- */

Test(mps, default_socket_from_the_environment)
{
	char p[108], big[109];
	setenv("GPUOS_SOCKET", "/somewhere/s.sock", 1);
	cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), GPUOS_SOCKET_FROM_ENV);
	cr_assert_str_eq(p, "/somewhere/s.sock");
	cr_assert_eq(gpuos_service_default_socket(1, p, sizeof(p)), GPUOS_SOCKET_FROM_ENV);
	/* 107 bytes fit a socket's address (with its NUL), 108 do not */
	memset(big, 'x', sizeof(big));
	big[0] = '/';
	big[107] = 0;
	setenv("GPUOS_SOCKET", big, 1);
	cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), GPUOS_SOCKET_FROM_ENV);
	big[107] = 'x';
	big[108] = 0;
	setenv("GPUOS_SOCKET", big, 1);
	cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), -ENAMETOOLONG);
}

Test(mps, default_socket_xdg_or_system)
{
	char p[108], want[300];
	int fd;
	unsetenv("GPUOS_SOCKET");
	setenv("XDG_RUNTIME_DIR", tmp, 1);
	snprintf(want, sizeof(want), "%s/gpuos.sock", tmp);
	if (geteuid() == 0) {
		/* root's service is the machine's, wherever its session lives */
		fd = unix_socket(want, 0);
		cr_assert_eq(gpuos_service_default_socket(1, p, sizeof(p)), GPUOS_SOCKET_FROM_SYSTEM);
		cr_assert_str_eq(p, GPUOS_DEFAULT_SOCKET);
		cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), GPUOS_SOCKET_FROM_SYSTEM);
		cr_assert_str_eq(p, GPUOS_DEFAULT_SOCKET);
		close(fd);
		return;
	}
	cr_assert_eq(gpuos_service_default_socket(1, p, sizeof(p)), GPUOS_SOCKET_FROM_XDG);
	cr_assert_str_eq(p, want);
	cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), GPUOS_SOCKET_FROM_SYSTEM, "no socket there yet");
	cr_assert_str_eq(p, GPUOS_DEFAULT_SOCKET);
	fd = unix_socket(want, 0);
	cr_assert_eq(gpuos_service_default_socket(0, p, sizeof(p)), GPUOS_SOCKET_FROM_XDG);
	cr_assert_str_eq(p, want);
	close(fd);
	unsetenv("XDG_RUNTIME_DIR");
	cr_assert_eq(gpuos_service_default_socket(1, p, sizeof(p)), GPUOS_SOCKET_FROM_SYSTEM);
}
