/* SPDX-License-Identifier: MIT */
/*
 * Remote loads (gpuos/remote.h, apps/remote/serve.h) over an in-process
 * transport: PE 0 serves from a host-mode runtime on the files image, PE 1
 * is a client; "put" is memcpy into the client's receive buffer, a signal
 * a release store. The server side is the code the NVSHMEM program runs on
 * the GPU (apps/remote/remote.cu), both ways (staging and put; direct into
 * the client's buffer, registered with the runtime), checked here against
 * the source files:
 * byte ranges and tensors, chunked through a small staging buffer, short
 * at a file's end, several slots in flight; and every hostile request
 * (outside the receive buffer, overflowing, unknown op, unterminated or
 * empty name, a slot whose seq disagrees, a path outside --root) answered
 * with its status, the receive buffer untouched, the server still serving.
 */
#ifdef GPUOS_MINI_CRITERION
#include "../gpu/mini_criterion.h"
#else
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"
#include "gpuos/remote.h"

#include "booted.h"
#include "../../apps/remote/serve.h"

#define RECV  (8u << 20)     /* every PE's receive buffer */
#define STAGE (64u << 10)    /* the server's staging: small, so loads come in chunks */
#define CANARY 0x5a

struct job {
	struct gpuos_remote_area area[2];   /* PE 0: the server, PE 1: the client */
	uint8_t *recv[2];
	struct remote_server s;
	pthread_t thread;
	struct booted b;
	uint32_t seq[GPUOS_REMOTE_SLOTS];
};

static void loop_put(void *ctx, uint32_t pe, uint64_t dst, const void *src, uint64_t len)
{
	struct job *j = (struct job *)ctx;
	memcpy(j->recv[pe] + dst, src, len);
}

static void loop_answer(void *ctx, uint32_t pe, uint32_t slot, const struct gpuos_remote_res *res)
{
	struct job *j = (struct job *)ctx;
	j->area[pe].res[slot] = *res;
	/* release: the answer and every put before it, before the signal; pairs
	 * with the client's acquire load in wait_answer */
	gpuos_store_release_sys64(&j->area[pe].res_sig[slot], res->seq);
}

static void *server(void *arg)
{
	struct job *j = (struct job *)arg;
	/* acquire: pairs with the release store of stop in job_stop */
	while (!gpuos_load_acquire_sys64(&j->area[0].stop))
		if (!remote_poll(&j->s))
			sched_yield();
	return NULL;
}

static struct job *job_start(const char *root, int direct)
{
	struct gpuos_boot_opts o;
	struct job *j = calloc(1, sizeof(*j));
	char dev[1200];
	uint64_t n_tensors = 0;
	uint32_t st;
	cr_assert_not_null(j);
	gpuos_boot_opts_default(&o);
	snprintf(dev, sizeof(dev), "emu:%s/ext4.img", dir);
	o.device = dev;
	o.warps = 2;
	o.heap_bytes = 8u << 20;
	o.root = root;
	booted_start(&j->b, &o);
	j->recv[0] = aligned_alloc(4096, RECV);
	j->recv[1] = aligned_alloc(4096, RECV);
	cr_assert(j->recv[0] && j->recv[1]);
	memset(j->recv[1], CANARY, RECV);
	if (direct) { /* the client's buffer as the server writes it: registered with its runtime */
		cr_assert_eq(gpuos_sys_register(j->b.sys, j->recv[1], RECV, 0), 0);
		j->s.direct[1] = j->recv[1];
	}
	j->s.mb = j->b.mb;
	j->s.name = j->b.heap;                             /* the heap is registered */
	j->s.stage = (uint8_t *)j->b.heap + (1u << 20);
	j->s.stage_bytes = STAGE;
	j->s.recv_bytes = RECV;
	j->s.npes = 2;
	j->s.me = 0;
	j->s.area = &j->area[0];
	j->s.x.put = loop_put;
	j->s.x.answer = loop_answer;
	j->s.x.ctx = j;
	if (!root) { /* the model TENSOR requests name tensors of */
		strcpy(j->b.heap, "/models/m.gguf");
		st = gpuos_model_open(j->b.mb, j->b.heap, 0, &j->s.model, &n_tensors, NULL, 0);
		cr_assert_eq(st, GPUOS_ST_OK, "open the model: %s", gpuos_status_name(st));
		cr_assert_gt(n_tensors, 4);
	}
	cr_assert_eq(pthread_create(&j->thread, NULL, server, j), 0);
	return j;
}

/* Stop the server and free everything; the requests it failed, read once
 * its thread has ended (the join orders its counts before the read). */
static uint64_t job_stop(struct job *j)
{
	uint64_t failed;
	/* release: pairs with the server loop's acquire load */
	gpuos_store_release_sys64(&j->area[0].stop, 1);
	pthread_join(j->thread, NULL);
	failed = j->s.failed;
	remote_close_all(&j->s);
	if (j->s.model)
		gpuos_close(j->b.mb, j->s.model);
	shut(&j->b);
	free(j->recv[0]);
	free(j->recv[1]);
	free(j);
	return failed;
}

/* The client's side: the request into the server's slot k, then its signal. */
static void post(struct job *j, uint32_t k, struct gpuos_remote_req *rq)
{
	rq->seq = ++j->seq[k];
	j->area[0].req[1][k] = *rq;
	/* release: the request before its signal; pairs with remote_poll's acquire */
	gpuos_store_release_sys64(&j->area[0].req_sig[1][k], rq->seq);
}

/* How long a slot's answer may take: a hang guard, not a bound on speed
 * (issue 35), longer under TSan (GPUOS_TEST_TIMEOUT_SCALE, as
 * mini_criterion scales its own). */
static uint64_t answer_guard_ns(void)
{
	const char *e = getenv("GPUOS_TEST_TIMEOUT_SCALE");
	return 120000000000ull * (uint64_t)(e && atoi(e) > 1 ? atoi(e) : 1);
}

static struct gpuos_remote_res wait_answer(struct job *j, uint32_t k)
{
	uint64_t t0 = gpuos_now_ns(), guard = answer_guard_ns();
	/* acquire: pairs with loop_answer's release store */
	while (gpuos_load_acquire_sys64(&j->area[1].res_sig[k]) != j->seq[k]) {
		cr_assert_lt(gpuos_now_ns() - t0, guard, "slot %u: no answer in %llu s", k,
			     (unsigned long long)(guard / 1000000000ull));
		sched_yield();
	}
	return j->area[1].res[k];
}

static struct gpuos_remote_res ask(struct job *j, uint32_t op, const char *name, uint64_t off, uint64_t len,
				   uint64_t dst)
{
	struct gpuos_remote_req rq;
	memset(&rq, 0, sizeof(rq));
	rq.op = op;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	rq.offset = off;
	rq.length = len;
	rq.dst = dst;
	post(j, 0, &rq);
	return wait_answer(j, 0);
}

static int untouched(const struct job *j, uint64_t from, uint64_t to)
{
	for (; from < to; from++)
		if (j->recv[1][from] != CANARY)
			return 0;
	return 1;
}

TestSuite(remote, .init = images, .timeout = 120);

static void byte_ranges_equal_the_file(int direct)
{
	struct job *j = job_start(NULL, direct);
	size_t len;
	unsigned char *big = slurp("big.bin", &len);
	uint64_t s = 3;
	int i;
	for (i = 0; i < 60; i++) {
		uint64_t n = 1 + (s = s * 6364136223846793005ull + 1442695040888963407ull) % (i % 4 ? 9000u : 700000u);
		uint64_t off = (s >> 17) % (len - n), dst = (s >> 7) % (RECV - n);
		struct gpuos_remote_res r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", off, n, dst);
		cr_assert_eq(r.status, GPUOS_ST_OK, "range %llu+%llu: %s", (unsigned long long)off, (unsigned long long)n,
			     gpuos_status_name(r.status));
		cr_assert_eq(r.bytes, n);
		cr_assert(memcmp(j->recv[1] + dst, big + off, n) == 0, "range %llu+%llu differs", (unsigned long long)off,
			  (unsigned long long)n);
	}
	/* past the end: short, never more than the file */
	{
		struct gpuos_remote_res r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", len - 1000, 300000, 0);
		cr_assert_eq(r.status, GPUOS_ST_OK);
		cr_assert_eq(r.bytes, 1000);
		cr_assert(memcmp(j->recv[1], big + len - 1000, 1000) == 0);
	}
	free(big);
	cr_assert_eq(job_stop(j), 0, "the server counted failed requests");
}

Test(remote, byte_ranges_equal_the_file_put) { byte_ranges_equal_the_file(0); }
Test(remote, byte_ranges_equal_the_file_direct) { byte_ranges_equal_the_file(1); }

static void tensors_by_name_equal_the_model(int direct)
{
	struct job *j = job_start(NULL, direct);
	size_t len;
	unsigned char *model = slurp("models/m.gguf", &len);
	struct gpuos_gguf_tensor *t = (struct gpuos_gguf_tensor *)(j->b.heap + (4u << 20)); /* the test's own place */
	uint32_t i, n = 0;
	for (i = 0; i < 40; i++) {
		struct gpuos_remote_res r;
		uint32_t st = gpuos_model_tensor(j->b.mb, j->s.model, i, t);
		if (st == GPUOS_ST_BAD_RANGE || st == GPUOS_ST_NOENT)
			break;
		cr_assert_eq(st, GPUOS_ST_OK);
		r = ask(j, GPUOS_REMOTE_TENSOR, t->name, 0, 0, 4096);
		cr_assert_eq(r.status, GPUOS_ST_OK, "%s: %s", t->name, gpuos_status_name(r.status));
		cr_assert_eq(r.bytes, t->size, "%s: %llu bytes of %llu", t->name, (unsigned long long)r.bytes,
			     (unsigned long long)t->size);
		cr_assert(memcmp(j->recv[1] + 4096, model + t->abs_off, t->size) == 0, "%s differs", t->name);
		/* a part of it */
		if (t->size > 100) {
			r = ask(j, GPUOS_REMOTE_TENSOR, t->name, 17, 50, 0);
			cr_assert_eq(r.status, GPUOS_ST_OK);
			cr_assert_eq(r.bytes, 50);
			cr_assert(memcmp(j->recv[1], model + t->abs_off + 17, 50) == 0);
		}
		n++;
	}
	cr_assert_gt(n, 4);
	free(model);
	job_stop(j);
}

Test(remote, tensors_by_name_equal_the_model_put) { tensors_by_name_equal_the_model(0); }
Test(remote, tensors_by_name_equal_the_model_direct) { tensors_by_name_equal_the_model(1); }

static void slots_in_flight_at_once(int direct)
{
	struct job *j = job_start(NULL, direct);
	size_t len;
	unsigned char *big = slurp("big.bin", &len);
	uint32_t k, round;
	for (round = 0; round < 20; round++) {
		for (k = 0; k < GPUOS_REMOTE_SLOTS; k++) {
			struct gpuos_remote_req rq;
			memset(&rq, 0, sizeof(rq));
			rq.op = GPUOS_REMOTE_RANGE;
			strcpy(rq.name, "/big.bin");
			rq.offset = (uint64_t)(round * 8 + k) * 51234u % (len - 200000);
			rq.length = 200000;
			rq.dst = (uint64_t)k << 20;
			post(j, k, &rq);
		}
		for (k = 0; k < GPUOS_REMOTE_SLOTS; k++) {
			struct gpuos_remote_res r = wait_answer(j, k);
			uint64_t off = (uint64_t)(round * 8 + k) * 51234u % (len - 200000);
			cr_assert_eq(r.status, GPUOS_ST_OK);
			cr_assert_eq(r.seq, j->seq[k]);
			cr_assert_eq(r.bytes, 200000);
			cr_assert(memcmp(j->recv[1] + ((uint64_t)k << 20), big + off, 200000) == 0, "slot %u round %u", k, round);
		}
	}
	free(big);
	job_stop(j);
}

Test(remote, slots_in_flight_at_once_put) { slots_in_flight_at_once(0); }
Test(remote, slots_in_flight_at_once_direct) { slots_in_flight_at_once(1); }

static void hostile_requests_get_their_status(int direct)
{
	struct job *j = job_start(NULL, direct);
	struct gpuos_remote_req rq;
	struct gpuos_remote_res r;
	memset(j->recv[1], CANARY, RECV);
	r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", 0, 4096, RECV - 100);
	cr_assert_eq(r.status, GPUOS_ST_BAD_DST, "past the receive buffer: %s", gpuos_status_name(r.status));
	r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", 0, ~0ull - 10, 100);
	cr_assert_eq(r.status, GPUOS_ST_OVERFLOW);
	r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", ~0ull - 10, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_OVERFLOW);
	r = ask(j, 7, "/big.bin", 0, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_BAD_OPCODE);
	r = ask(j, GPUOS_REMOTE_RANGE, "", 0, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_NOENT);
	r = ask(j, GPUOS_REMOTE_RANGE, "/big.bin", 0, 0, 0);
	cr_assert_eq(r.status, GPUOS_ST_BAD_RANGE);
	r = ask(j, GPUOS_REMOTE_RANGE, "/no/such/file", 0, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_NOENT);
	r = ask(j, GPUOS_REMOTE_RANGE, "/dir", 0, 100, 0);
	cr_assert_neq(r.status, GPUOS_ST_OK, "a directory's bytes");
	r = ask(j, GPUOS_REMOTE_TENSOR, "no.such.tensor", 0, 0, 0);
	cr_assert_eq(r.status, GPUOS_ST_NOENT);
	r = ask(j, GPUOS_REMOTE_TENSOR, "token_embd.weight", 0, 0, RECV - 16);
	cr_assert_eq(r.status, GPUOS_ST_BAD_DST, "a whole tensor that does not fit: %s", gpuos_status_name(r.status));
	r = ask(j, GPUOS_REMOTE_TENSOR, "token_embd.weight", 1u << 30, 10, 0);
	cr_assert_eq(r.status, GPUOS_ST_BAD_RANGE);
	/* a name without its NUL */
	memset(&rq, 'a', sizeof(rq));
	rq.op = GPUOS_REMOTE_RANGE;
	rq.offset = 0;
	rq.length = 10;
	rq.dst = 0;
	post(j, 1, &rq);
	r = wait_answer(j, 1);
	cr_assert_eq(r.status, GPUOS_ST_NAMETOOLONG);
	/* a slot whose request says another seq than its signal */
	memset(&rq, 0, sizeof(rq));
	rq.op = GPUOS_REMOTE_RANGE;
	strcpy(rq.name, "/big.bin");
	rq.length = 10;
	j->area[0].req[1][2] = rq;
	j->area[0].req[1][2].seq = 99;
	j->seq[2]++;
	gpuos_store_release_sys64(&j->area[0].req_sig[1][2], j->seq[2]);
	r = wait_answer(j, 2);
	cr_assert_eq(r.status, GPUOS_ST_CORRUPT);
	cr_assert(untouched(j, 0, RECV), "a refused request wrote into the receive buffer");
	/* and it serves on */
	r = ask(j, GPUOS_REMOTE_RANGE, "/small.txt", 0, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_OK);
	cr_assert_gt(r.bytes, 10);
	cr_assert_eq(job_stop(j), 13, "the server's count of failed requests");
}

Test(remote, hostile_requests_get_their_status_put) { hostile_requests_get_their_status(0); }
Test(remote, hostile_requests_get_their_status_direct) { hostile_requests_get_their_status(1); }

/* A server whose runtime has --root /dir: a client names files under it
 * only; no model is served. */
Test(remote, the_servers_root_holds)
{
	struct job *j = job_start("/dir", 0);
	size_t len;
	unsigned char *deep = slurp("dir/sub/deep.txt", &len);
	struct gpuos_remote_res r = ask(j, GPUOS_REMOTE_RANGE, "/sub/deep.txt", 0, len, 0);
	cr_assert_eq(r.status, GPUOS_ST_OK);
	cr_assert_eq(r.bytes, len);
	cr_assert(memcmp(j->recv[1], deep, len) == 0);
	r = ask(j, GPUOS_REMOTE_RANGE, "/../big.bin", 0, 100, 0);
	cr_assert_eq(r.status, GPUOS_ST_NOENT, "outside --root: %s", gpuos_status_name(r.status));
	r = ask(j, GPUOS_REMOTE_TENSOR, "token_embd.weight", 0, 0, 0);
	cr_assert_eq(r.status, GPUOS_ST_NOENT, "no model served");
	free(deep);
	job_stop(j);
}
