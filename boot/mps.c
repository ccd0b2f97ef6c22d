/* SPDX-License-Identifier: MIT */
/*
 * CUDA MPS for `gpuos boot` (docs/service.md). Kernels of other processes
 * run beside the runtime's persistent kernel only when both processes are
 * clients of one MPS daemon (docs/platform.md), and a process becomes one
 * when CUDA starts in it while a daemon answers at its pipe directory
 * (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps). So the service looks
 * for a daemon there before it makes its CUDA context, joins it if one
 * answers, and otherwise starts one (nvidia-cuda-mps-control -d), as
 * scripts/mps-start.sh does by hand; one it started it asks to quit when
 * the service stops (gpuos_mps_stop). A daemon that cannot be started is a
 * warning, never a failure of the boot: host clients need no MPS.
 *
 * Whether a daemon answers is decided by its control endpoint alone (a
 * socket that accepts a connection, or a FIFO that has a reader), so that
 * it is testable with a fake pipe directory (tests/unit/test_mps.c) and
 * holds where the daemon runs in another PID namespace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuos/host.h"
#include "gpu.h"

#define MPS_PIPE_DEFAULT "/tmp/nvidia-mps"  /* where CUDA looks when the variable is unset */
#define MPS_LOG_DEFAULT "/tmp/nvidia-log"   /* as scripts/mps-start.sh */
#define MPS_PROGRAM "nvidia-cuda-mps-control"
#define MPS_START_WAIT_MS 5000u

static void sleep_ms(unsigned ms)
{
	struct timespec t = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L };
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

int gpuos_mps_probe(const char *dir)
{
	struct sockaddr_un a;
	struct stat st;
	int fd, r, e;

	if (!dir || !*dir || (size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s/control", dir) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	if (lstat(a.sun_path, &st))
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	if (S_ISFIFO(st.st_mode)) {
		/* A FIFO without a reader refuses a writer that will not wait. */
		fd = open(a.sun_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return errno == ENXIO ? 0 : -errno;
		close(fd);
		return 1;
	}
	if (!S_ISSOCK(st.st_mode))
		return 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	a.sun_family = AF_UNIX;
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	e = errno;
	close(fd);
	if (!r || e == EINPROGRESS || e == EAGAIN || e == EPROTOTYPE)
		return 1; /* it accepts (a full backlog, or a socket of another type, answers too) */
	if (e == EACCES || e == EPERM)
		return -EACCES;
	return 0; /* ECONNREFUSED: a daemon that ended left it behind */
}

/* mkdir -p, each directory made 0755 where missing. */
static int make_dirs(const char *path, char *err, size_t errlen)
{
	char p[4096];
	size_t i, n = strlen(path);
	if (n >= sizeof(p)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(p, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		p[i] = 0;
		if (mkdir(p, 0755) && errno != EEXIST) {
			int e = errno;
			snprintf(err, errlen, "make %s: %s", p, strerror(e));
			return -e;
		}
		p[i] = i < n ? '/' : 0;
	}
	return 0;
}

int gpuos_mps_start(const char *prog, const char *dir, const char *log_dir, unsigned wait_ms, char *err,
		    size_t errlen)
{
	unsigned waited = 0;
	pid_t pid;
	int r, status = 0;

	prog = prog && *prog ? prog : MPS_PROGRAM;
	if ((r = make_dirs(dir, err, errlen)) || (r = make_dirs(log_dir, err, errlen)))
		return r;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return r;
	}
	if (pid == 0) {
		/* The daemon forks away from this child: it must not keep a pipe
		 * of ours (a write to one nobody reads would end it), so its
		 * output goes to its log directory's control.log, as it logs. */
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
		setenv("CUDA_MPS_LOG_DIRECTORY", log_dir, 1);
		execlp(prog, prog, "-d", (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* `-d` returns once the daemon has forked away. */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(err, errlen, "wait for %s: %s", prog, strerror(errno));
			return -EIO;
		}
		if (waited >= wait_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, errlen, "%s -d did not return within %u ms", prog, wait_ms);
			return -EIO;
		}
		sleep_ms(10);
		waited += 10;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		snprintf(err, errlen, "%s is not installed (it comes with the NVIDIA driver)", prog);
		return -ENOENT;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "%s -d %s %d (see %s/control.log)", prog,
			 WIFEXITED(status) ? "exited with status" : "was killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), log_dir);
		return -EIO;
	}
	/* The daemon makes its control endpoint a moment after it forks. */
	for (;;) {
		r = gpuos_mps_probe(dir);
		if (r == 1)
			return 0;
		if (waited >= wait_ms)
			break;
		sleep_ms(20);
		waited += 20;
	}
	snprintf(err, errlen, "the daemon %s -d started answers at no %s/control%s (see %s/control.log)", prog, dir,
		 r == -EACCES ? " that we may use" : "", log_dir);
	return -EIO;
}

/* A live process of an MPS daemon: the control daemon or a server (its
 * name, cut to 15 bytes by the kernel, begins "nvidia-cuda-mps"), not a
 * zombie (a daemon that quit stays one where nothing reaps it, as in
 * containers). dir non-NULL: only one whose environment names dir as its
 * pipe directory (a daemon we started got it from us, its servers from
 * it); another daemon, at another directory, is not ours to wait for. */
/* /proc/PID/NAME into buf, NUL-terminated (cut at len - 1); its bytes, or
 * -1 where it cannot be read (the process has gone). */
static ssize_t read_proc(const char *pid, const char *name, char *buf, size_t len)
{
	char path[300];
	ssize_t n;
	int fd;
	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

int gpuos_mps_daemon_runs(const char *dir)
{
	char want[4200], buf[8192];
	size_t wlen = 0;
	struct dirent *e;
	DIR *d = opendir("/proc");
	int found = 0;

	if (!d)
		return 0;
	if (dir)
		wlen = (size_t)snprintf(want, sizeof(want), "CUDA_MPS_PIPE_DIRECTORY=%s", dir) + 1; /* with its NUL */
	while (!found && (e = readdir(d))) {
		ssize_t n;
		size_t k;
		const char *open_paren, *close_paren;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		/* "PID (COMM) STATE ..." */
		if (read_proc(e->d_name, "stat", buf, sizeof(buf)) <= 0)
			continue;
		open_paren = strchr(buf, '(');
		close_paren = strrchr(buf, ')');
		if (!open_paren || !close_paren || strncmp(open_paren + 1, "nvidia-cuda-mps", 15) ||
		    close_paren[1] != ' ' || close_paren[2] == 'Z' || close_paren[2] == 'X')
			continue;
		if (!dir) {
			found = 1;
			break;
		}
		/* the last entry of a longer environment, cut, ends too */
		n = read_proc(e->d_name, "environ", buf, sizeof(buf));
		for (k = 0; n > 0 && k + wlen <= (size_t)n && !found; k += strlen(buf + k) + 1)
			found = memcmp(buf + k, want, wlen) == 0;
	}
	closedir(d);
	return found;
}

int gpuos_mps_stop(const struct gpuos_mps *m, unsigned wait_ms, char *err, size_t errlen)
{
	const char *prog = getenv("GPUOS_MPS_CONTROL");
	unsigned waited = 0;
	int in[2], status = 0;
	pid_t pid;

	if (m->state != GPUOS_MPS_STARTED)
		return 0;
	prog = prog && *prog ? prog : MPS_PROGRAM;
	if (pipe2(in, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);
		dup2(in[0], 0);
		if (nul >= 0) {
			dup2(nul, 1);
			dup2(nul, 2);
		}
		setenv("CUDA_MPS_PIPE_DIRECTORY", m->dir, 1);
		setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
		execlp(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	if (write(in[1], "quit\n", 5) != 5) {
		/* it ended already: its status says how */
	}
	close(in[1]);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(err, errlen, "wait for %s: %s", prog, strerror(errno));
			return -EIO;
		}
		if (waited >= wait_ms) {
			/* Still taking it: the daemon ends when its clients have, and
			 * this process is one (measured on the H200: quit never came
			 * back while the service lived, even with its CUDA contexts
			 * reset). It goes on after we exit; gpuos_mps_wait_gone
			 * tells when it has ended. */
			return 0;
		}
		sleep_ms(10);
		waited += 10;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "%s quit: %s %d", prog, WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -EIO;
	}
	return 0;
}

int gpuos_mps_wait_gone(const char *dir, unsigned wait_ms)
{
	unsigned waited = 0;
	while (gpuos_mps_probe(dir) == 1 || gpuos_mps_daemon_runs(dir)) {
		if (waited >= wait_ms)
			return -ETIMEDOUT;
		sleep_ms(10);
		waited += 10;
	}
	return 0;
}

/* A machine where the runtime can go on a GPU, decided without a CUDA call
 * (CUDA joins MPS when it starts, so nothing of CUDA may run before MPS is
 * settled): this binary carries the runtime image, and the NVIDIA driver
 * lists a GPU. */
static int gpu_machine(void)
{
	DIR *d;
	struct dirent *e;
	int n = 0;
	if (!gpuos_rt_image)
		return 0;
	d = opendir("/proc/driver/nvidia/gpus");
	if (d) {
		while (!n && (e = readdir(d)))
			n = e->d_name[0] != '.';
		closedir(d);
	}
	return n || access("/dev/nvidia0", F_OK) == 0;
}

void gpuos_mps_setup(struct gpuos_mps *m, int host_mode, int no_mps)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY"), *log = getenv("CUDA_MPS_LOG_DIRECTORY");
	int r;

	memset(m, 0, sizeof(*m));
	if (host_mode || !gpu_machine()) {
		m->state = GPUOS_MPS_HOST;
		return;
	}
	if (no_mps) {
		m->state = GPUOS_MPS_OFF;
		return;
	}
	snprintf(m->dir, sizeof(m->dir), "%s", dir && *dir ? dir : MPS_PIPE_DEFAULT);
	snprintf(m->log_dir, sizeof(m->log_dir), "%s", log && *log ? log : MPS_LOG_DEFAULT);
	/* CUDA, started next in this process, looks where we looked. */
	setenv("CUDA_MPS_PIPE_DIRECTORY", m->dir, 1);
	r = gpuos_mps_probe(m->dir);
	if (r == 1) {
		m->state = GPUOS_MPS_JOINED;
		return;
	}
	if (r == -EACCES) {
		m->state = GPUOS_MPS_FAILED;
		snprintf(m->why, sizeof(m->why), "a daemon answers at %s/control, but not to this user", m->dir);
		return;
	}
	r = gpuos_mps_start(getenv("GPUOS_MPS_CONTROL"), m->dir, m->log_dir, MPS_START_WAIT_MS, m->why,
			    sizeof(m->why));
	m->state = r ? GPUOS_MPS_FAILED : GPUOS_MPS_STARTED;
	if (!r)
		m->why[0] = 0;
}

const char *gpuos_mps_state_name(int state)
{
	switch (state) {
	case GPUOS_MPS_HOST: return "host";
	case GPUOS_MPS_OFF: return "off";
	case GPUOS_MPS_JOINED: return "joined";
	case GPUOS_MPS_STARTED: return "started";
	case GPUOS_MPS_FAILED: return "failed";
	default: return "unknown";
	}
}

const char *gpuos_mps_text(const struct gpuos_mps *m, char *buf, size_t len)
{
	switch (m->state) {
	case GPUOS_MPS_HOST:
		snprintf(buf, len, "none (host mode)");
		break;
	case GPUOS_MPS_OFF:
		snprintf(buf, len, "off (--no-mps)");
		break;
	case GPUOS_MPS_JOINED:
		snprintf(buf, len, "joined the daemon at %s", m->dir);
		break;
	case GPUOS_MPS_STARTED:
		snprintf(buf, len, "started a daemon at %s (its logs in %s)", m->dir, m->log_dir);
		break;
	default:
		snprintf(buf, len, "none (warning: %s; kernels of other processes will not run beside the runtime)",
			 m->why);
		break;
	}
	return buf;
}
