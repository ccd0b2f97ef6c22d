/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_client.c - a system that is a client of the service
 * (gpuos_connect, host.h; docs/design.md section 12). No runtime runs in
 * this process: it attaches to the one `gpuos boot` runs, posts through
 * its own mailbox (the loads of boot/sys/sys_load.c, unchanged), and lends the
 * service memory of its own as destinations: memfds it maps here and
 * there, VRAM by its IPC handle. The runtime address of each range is the
 * service's: requests name that, this process touches its own mapping.
 * Nothing here parks anything, and CUDA in this process stays as the
 * program set it up: a client obeys no rule of docs/embedding.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sys_internal.h"

/* A range of this process's memory the client knows of: made by
 * gpuos_sys_alloc (owned: freed by gpuos_sys_free), or the caller's own
 * (gpuos_sys_register, gpuos_sys_register_fd). registered: the service
 * has it, at rt. An owned range stays after gpuos_sys_unregister (its
 * bytes are the caller's), registered again by gpuos_sys_register. */
struct client_mem {
	char *ptr;
	uint64_t len;
	uint64_t rt;
	int fd;          /* owned host memory: its memfd (kept for registering again), else -1 */
	int dev;         /* VRAM */
	int owned;
	int registered;
};

struct sys_client {
	struct gpuos_attached at;
	pthread_mutex_t lock;     /* the connection and mem[]: one call at a time */
	struct client_mem *mem;
	uint32_t nmem, cap;
	int service_gpu;          /* the service's runtime is on a GPU: it takes VRAM */
	char why[256];            /* the service's reason for the last refusal */
};

/* The service's runtime: on a GPU or not (its status line), asked on a
 * connection of its own before attaching. */
static int service_on_gpu(const char *path)
{
	char err[256], reply[4096];
	int fd = gpuos_service_connect(path, err, sizeof(err)), gpu = 0;
	if (fd < 0)
		return 0;
	if (gpuos_service_call(fd, "status\n", reply, sizeof(reply), 10000) == 0)
		gpu = strncmp(reply, "ok status/1 runtime=gpu ", 24) == 0;
	close(fd);
	return gpu;
}

int gpuos_connect(const char *socket, struct gpuos_sys **out, char *err, size_t errlen)
{
	char def[108], why[256];
	struct gpuos_sys *s;
	struct sys_client *c;
	int r;

	*out = NULL;
	if (!socket) {
		if (gpuos_service_default_socket(0, def, sizeof(def)) < 0) {
			snprintf(err, errlen, "the default socket ($GPUOS_SOCKET) is too long for a socket's address");
			return -ENAMETOOLONG;
		}
		socket = def;
	}
	s = calloc(1, sizeof(*s));
	c = calloc(1, sizeof(*c));
	if (!s || !c) {
		free(s);
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = gpuos_service_attach(socket, &c->at, err, errlen);
	if (r) {
		free(s);
		free(c);
		return r;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->service_gpu = service_on_gpu(socket);
	s->client = c;
	s->shm_fd = -1;
	/* This process's GPU, where it has one and the service's runtime is
	 * on one: VRAM destinations, stream-ordered loads, gpuos_dequant. */
	if (c->service_gpu && gpuos_gpu_open_client(&s->gpu, 0, why, sizeof(why)))
		s->gpu = NULL;
	gpuos_sys_load_init(s);
	*out = s;
	return 0;
}

int gpuos_sys_is_client(const struct gpuos_sys *s)
{
	return s && s->client != NULL;
}

int gpuos_conn_gone(const struct gpuos_sys *s)
{
	return gpuos_service_gone(&s->client->at) != 0;
}

struct gpuos_mbox *gpuos_conn_mbox(const struct gpuos_sys *s)
{
	return s->client->at.mb;
}

void *gpuos_conn_share(const struct gpuos_sys *s, uint64_t *rt, uint64_t *len)
{
	if (rt)
		*rt = s->client->at.heap_rt;
	if (len)
		*len = s->client->at.heap_len;
	return s->client->at.heap;
}

int gpuos_conn_rt(const struct gpuos_sys *s, const void *p, uint64_t len, int share, uint64_t *rt)
{
	struct sys_client *c = s->client;
	uint64_t a = (uint64_t)(uintptr_t)p;
	uint32_t i;
	int r = -EFAULT;
	if (a + len < a)
		return -EFAULT;
	if (share && a >= (uint64_t)(uintptr_t)c->at.heap && a + len <= (uint64_t)(uintptr_t)c->at.heap + c->at.heap_len) {
		*rt = c->at.heap_rt + (a - (uint64_t)(uintptr_t)c->at.heap);
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nmem; i++) {
		const struct client_mem *m = &c->mem[i];
		if (m->registered && a >= (uint64_t)(uintptr_t)m->ptr && a + len <= (uint64_t)(uintptr_t)m->ptr + m->len) {
			*rt = m->rt + (a - (uint64_t)(uintptr_t)m->ptr);
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* mem[] entries, under c->lock. */
static struct client_mem *mem_find(struct sys_client *c, const void *ptr)
{
	for (uint32_t i = 0; i < c->nmem; i++)
		if (c->mem[i].ptr == ptr)
			return &c->mem[i];
	return NULL;
}

static struct client_mem *mem_add(struct sys_client *c)
{
	if (c->nmem == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 16;
		struct client_mem *m = realloc(c->mem, cap * sizeof(*m));
		if (!m)
			return NULL;
		c->mem = m;
		c->cap = cap;
	}
	memset(&c->mem[c->nmem], 0, sizeof(c->mem[0]));
	c->mem[c->nmem].fd = -1;
	return &c->mem[c->nmem++];
}

static void mem_drop(struct sys_client *c, struct client_mem *m)
{
	*m = c->mem[--c->nmem];
}

/* Register m with the service: its memfd, or its VRAM by IPC handle. */
static int mem_register(struct gpuos_sys *s, struct client_mem *m, int fd, uint64_t fd_off)
{
	struct sys_client *c = s->client;
	struct gpuos_client_mem cm;
	int r;
	memset(&cm, 0, sizeof(cm));
	cm.len = m->len;
	cm.fd = -1;
	if (m->dev) {
		cm.vram = 1;
		if (!s->gpu)
			return gpuos_sys_fail(-EOPNOTSUPP, "VRAM as a destination: %s", c->service_gpu ?
					      "this process has no CUDA GPU" : "the service's runtime is not on a GPU (host mode)");
		r = gpuos_gpu_ipc_export(s->gpu, m->ptr, m->len, cm.ipc, &cm.offset);
		if (r)
			return gpuos_sys_fail(r, "export %p (%llu bytes) for the service (cudaIpcGetMemHandle): %s", m->ptr,
					      (unsigned long long)m->len, r == -ERANGE ? "the range crosses allocations" :
					      r == -EINVAL ? "not device memory of this GPU" : strerror(-r));
	} else {
		cm.fd = fd;
		cm.offset = fd_off;
	}
	r = gpuos_service_register(&c->at, &cm, &m->rt, c->why, sizeof(c->why));
	if (r)
		return gpuos_sys_fail(r, "register %llu bytes at %p with the service: %s", (unsigned long long)m->len, m->ptr,
				      c->why);
	m->registered = 1;
	return 0;
}

/* The service lets go of m. A refusal leaves it lent (the service may
 * still write it: it must not be freed); a service that is gone has let
 * go of everything. */
static int mem_unregister(struct sys_client *c, struct client_mem *m)
{
	int r;
	if (!m->registered)
		return 0;
	r = gpuos_service_unregister(&c->at, m->rt, c->why, sizeof(c->why));
	if (!r || r == -EPIPE || r == -ETIMEDOUT || r == -ENOENT)
		m->registered = 0;
	return r ? gpuos_sys_fail(r, "unregister %p: %s", m->ptr, c->why) : 0;
}

static void mem_free(struct gpuos_sys *s, struct client_mem *m)
{
	if (m->dev)
		gpuos_gpu_dev_free(s->gpu, (uint64_t)(uintptr_t)m->ptr);
	else
		munmap(m->ptr, m->len);
	if (m->fd >= 0)
		close(m->fd);
}

int gpuos_conn_alloc(struct gpuos_sys *s, size_t len, uint32_t flags, void **ptr)
{
	struct sys_client *c = s->client;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct client_mem *m;
	uint64_t dev = 0;
	int r = 0, fd = -1;
	void *p = MAP_FAILED;

	*ptr = NULL;
	if (len == 0 || (flags & ~GPUOS_REGISTER_DEVICE))
		return -EINVAL;
	len = (len + page - 1) / page * page;
	if (flags & GPUOS_REGISTER_DEVICE) {
		if (!s->gpu)
			return gpuos_sys_fail(-EOPNOTSUPP, "VRAM: %s", c->service_gpu ? "this process has no CUDA GPU"
											     : "the service's runtime is not on a GPU");
		if (gpuos_gpu_dev_alloc(s->gpu, len, &dev))
			return gpuos_sys_fail(-ENOMEM, "cudaMalloc of %zu bytes failed", len);
		p = (void *)(uintptr_t)dev;
	} else {
		/* A memfd that cannot shrink (what the service asks: its mapping
		 * never faults) nor grow. */
		fd = memfd_create("gpuos-lent", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
		    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
			r = -errno;
			if (fd >= 0)
				close(fd);
			return gpuos_sys_fail(r ? r : -ENOMEM, "a memfd of %zu bytes: %s", len, strerror(r ? -r : ENOMEM));
		}
	}
	pthread_mutex_lock(&c->lock);
	m = mem_add(c);
	if (!m) {
		r = -ENOMEM;
	} else {
		m->ptr = p;
		m->len = len;
		m->fd = fd;
		m->dev = (flags & GPUOS_REGISTER_DEVICE) != 0;
		m->owned = 1;
		r = mem_register(s, m, fd, 0);
		if (r) {
			mem_free(s, m);
			mem_drop(c, m);
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!m) {
		if (dev)
			gpuos_gpu_dev_free(s->gpu, dev);
		else {
			munmap(p, len);
			close(fd);
		}
		return -ENOMEM;
	}
	if (!r)
		*ptr = p;
	return r;
}

int gpuos_conn_free(struct gpuos_sys *s, void *ptr)
{
	struct sys_client *c = s->client;
	struct client_mem *m;
	int r = 0;
	gpuos_sys_load_drain(s); /* stream-ordered loads into it end first */
	pthread_mutex_lock(&c->lock);
	m = mem_find(c, ptr);
	if (!m || !m->owned) {
		pthread_mutex_unlock(&c->lock);
		return -EINVAL;
	}
	if (m->registered)
		r = mem_unregister(c, m);
	if (m->registered) { /* refused: the service may still write it */
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	/* the service let go of it (or is gone, and with it its mapping) */
	mem_free(s, m);
	mem_drop(c, m);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int gpuos_conn_register(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags, int fd, uint64_t fd_off)
{
	struct sys_client *c = s->client;
	struct client_mem *m;
	int r;
	if (!ptr || !len || (flags & ~GPUOS_REGISTER_DEVICE))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	m = mem_find(c, ptr);
	if (m && m->registered) {
		r = -EINVAL; /* registered already */
	} else if (m) { /* an owned range, unregistered: again, whole */
		r = len == m->len ? mem_register(s, m, m->fd, 0) : -EINVAL;
	} else if (!(flags & GPUOS_REGISTER_DEVICE) && fd < 0) {
		r = gpuos_sys_fail(-EOPNOTSUPP, "host memory of a client reaches the service only as a memfd: "
				   "gpuos_sys_register_fd, or gpuos_sys_alloc");
	} else if (!(m = mem_add(c))) {
		r = -ENOMEM;
	} else {
		m->ptr = ptr;
		m->len = len;
		m->dev = (flags & GPUOS_REGISTER_DEVICE) != 0;
		r = mem_register(s, m, fd, fd_off);
		if (r)
			mem_drop(c, m);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int gpuos_conn_unregister(struct gpuos_sys *s, void *ptr)
{
	struct sys_client *c = s->client;
	struct client_mem *m;
	int r;
	gpuos_sys_load_drain(s);
	pthread_mutex_lock(&c->lock);
	m = mem_find(c, ptr);
	if (!m || !m->registered) {
		pthread_mutex_unlock(&c->lock);
		return -ENOENT;
	}
	r = mem_unregister(c, m);
	if (!m->owned && !m->registered)
		mem_drop(c, m);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int gpuos_conn_shutdown(struct gpuos_sys *s)
{
	struct sys_client *c = s->client;
	uint32_t i;
	/* Its loads are finished already (gpuos_shutdown: gpuos_sys_load_fini).
	 * Every range taken back first, each under the service's park, so that
	 * nothing of this process's memory is mapped there when it is freed:
	 * CUDA leaves VRAM freed under another process's IPC mapping undefined.
	 * Detaching would drop them too, but later (the area's renewal). A
	 * range the service still holds (refused) is not freed: it stays
	 * this process's until exit. */
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nmem; i++)
		mem_unregister(c, &c->mem[i]);
	pthread_mutex_unlock(&c->lock);
	gpuos_service_detach(&c->at);
	for (i = 0; i < c->nmem; i++)
		if (c->mem[i].owned && !c->mem[i].registered)
			mem_free(s, &c->mem[i]);
	free(c->mem);
	if (s->gpu)
		gpuos_gpu_close(s->gpu);
	pthread_mutex_destroy(&c->lock);
	free(c);
	free(s);
	return 0;
}
