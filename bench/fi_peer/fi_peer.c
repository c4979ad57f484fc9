/*
 * fi_peer: the libfabric peer of `make bench`.
 *
 * One program, two roles, built against Debian's libfabric-dev and driven by bench/run.sh:
 *
 *   fi_peer -s [-a ADDR] [-p PORT] [-1]
 *   fi_peer -c ADDR [-p PORT] -t write|read|send|lat [-z SIZE] [-D SECONDS | -n ITERS]
 *           [-d DEPTH] [--poll] [-w WARMUP_SECONDS]
 *
 * It opens the "tcp" provider with a connected (FI_EP_MSG) endpoint and measures, from the
 * client, one-direction RMA Write, RMA Read or Send/Receive bandwidth (a window of DEPTH
 * operations kept in flight), or Send/Receive ping-pong latency. Completions are waited for
 * by blocking on the CQ (fi_cq_sread) unless --poll asks for busy polling (fi_cq_read).
 * The client prints one JSON object on stdout. Only loopback addresses are accepted: this
 * program exists to compare against OpenNDK on one machine and never talks to another host.
 *
 * Conversation (all control data in CM private data or in zero-length messages with
 * immediate data, so the timed phase carries nothing but the payload):
 *   client -> server   connect, private data = struct fp_hello (test, size, depth, flags)
 *   server -> client   accept,  private data = struct fp_offer (buffer address and key)
 *   client             warm-up phase, then a MARK message (server starts its CPU clock)
 *   client             timed phase, then a STOP message (server stops its CPU clock)
 *   server -> client   struct fp_result (server CPU time, messages received)
 * Both ends run on the same host, so the structures travel in host byte order.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define FP_MAGIC 0x46504552u /* "FPER" */
#define FP_VERSION 1u
#define FP_DEFAULT_PORT "18525"
#define FP_MAX_SAMPLES (4u << 20)
#define FP_MAX_SIZE (64ull << 20)

enum fp_test { FP_WRITE = 1, FP_READ, FP_SEND, FP_LAT };
enum fp_code { FP_MARK = 1, FP_STOP = 2 };
enum { FP_FLAG_POLL = 1 };

struct fp_hello {
	uint32_t magic, version, test, flags;
	uint64_t size;
	uint32_t depth, pad;
};

struct fp_offer {
	uint32_t magic, status;
	uint64_t addr, key;
};

struct fp_result {
	uint32_t magic, pad;
	uint64_t cpu_ns, msgs, bytes; /* bytes: payload the server's receives reported */
};

struct fp {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;  /* the passive endpoint's (server) or the connection's (client) */
	struct fid_eq *ceq; /* the connection's */
	struct fid_pep *pep;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_mr *mr;
	unsigned char *buf; /* [0, size) receive/target, [size, 2*size) send/source, then the result */
	size_t size;
	bool poll;
	size_t inject_max;
	uint64_t mr_mode;
};

static const char *prog = "fi_peer";

static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void check(int ret, const char *what)
{
	if (ret < 0)
		die("%s: %s", what, fi_strerror(-ret));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

static bool is_loopback(const char *addr)
{
	unsigned char a4[4], a6[16];
	static const unsigned char lo6[16] = { [15] = 1 };
	if (inet_pton(AF_INET, addr, a4) == 1)
		return a4[0] == 127;
	if (inet_pton(AF_INET6, addr, a6) == 1)
		return memcmp(a6, lo6, sizeof(lo6)) == 0;
	return false;
}

static struct fi_info *fp_hints(void)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		die("fi_allocinfo: out of memory");
	h->caps = FI_MSG | FI_RMA;
	h->mode = 0; /* contexts are ours: plain tags, never provider scratch space */
	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup("tcp");
	h->addr_format = FI_FORMAT_UNSPEC;
	return h;
}

/* ---- completion handling ---- */

static void cq_fail(struct fp *p, ssize_t ret)
{
	if (ret == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(p->cq, &err, 0) > 0)
			die("completion error: %s (%s)", fi_strerror(err.err),
			    fi_cq_strerror(p->cq, err.prov_errno, err.err_data, NULL, 0));
	}
	die("fi_cq_read: %s", fi_strerror((int)-ret));
}

/* Reads up to max completions; waits (busy or blocking) until at least one is there. */
static size_t cq_get(struct fp *p, struct fi_cq_data_entry *e, size_t max)
{
	for (;;) {
		ssize_t n = p->poll ? fi_cq_read(p->cq, e, max) : fi_cq_sread(p->cq, e, max, NULL, -1);
		if (n > 0)
			return (size_t)n;
		if (n != -FI_EAGAIN)
			cq_fail(p, n);
	}
}

/* Non-blocking variant: returns 0 when nothing is ready. */
static size_t cq_try(struct fp *p, struct fi_cq_data_entry *e, size_t max)
{
	ssize_t n = fi_cq_read(p->cq, e, max);
	if (n > 0)
		return (size_t)n;
	if (n != -FI_EAGAIN)
		cq_fail(p, n);
	return 0;
}

/* Posting: retry on -FI_EAGAIN while draining the CQ into the caller's accounting. */
typedef void (*fp_sink)(void *arg, const struct fi_cq_data_entry *e);

static void post_retry(struct fp *p, ssize_t (*post)(struct fp *, void *), void *parg,
		       fp_sink sink, void *sarg, const char *what)
{
	for (;;) {
		ssize_t ret = post(p, parg);
		if (ret == 0)
			return;
		if (ret != -FI_EAGAIN)
			die("%s: %s", what, fi_strerror((int)-ret));
		struct fi_cq_data_entry e[8];
		size_t n = cq_try(p, e, 8);
		for (size_t i = 0; i < n; i++)
			sink(sarg, &e[i]);
	}
}

static void *mr_desc(struct fp *p)
{
	return fi_mr_desc(p->mr);
}

static ssize_t post_recv_data(struct fp *p, void *ctx)
{
	return fi_recv(p->ep, p->buf, p->size, mr_desc(p), 0, ctx);
}

static ssize_t post_send_data(struct fp *p, void *ctx)
{
	if (p->size <= p->inject_max)
		return fi_inject(p->ep, p->buf + p->size, p->size, 0);
	return fi_send(p->ep, p->buf + p->size, p->size, mr_desc(p), 0, ctx);
}

/* ---- shared setup ---- */

/* The result record follows the two payload halves, 64-byte aligned. */
static size_t result_off(size_t size)
{
	return (2 * size + 63) & ~(size_t)63;
}

static void fp_alloc(struct fp *p, size_t size, uint64_t access)
{
	p->size = size;
	size_t len = result_off(size) + sizeof(struct fp_result);
	if (posix_memalign((void **)&p->buf, 4096, len))
		die("out of memory for %zu bytes", len);
	memset(p->buf, 0x5a, len);
	check(fi_mr_reg(p->domain, p->buf, len, access, 0, 0, 0, &p->mr, NULL), "fi_mr_reg");
}

static struct fp_result *result_slot(struct fp *p)
{
	return (struct fp_result *)(void *)(p->buf + result_off(p->size));
}

static void open_ep(struct fp *p, struct fi_info *info, size_t cq_size)
{
	struct fi_cq_attr cq_attr;
	memset(&cq_attr, 0, sizeof(cq_attr));
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.wait_obj = p->poll ? FI_WAIT_NONE : FI_WAIT_UNSPEC;
	cq_attr.size = cq_size;
	check(fi_domain(p->fabric, info, &p->domain, NULL), "fi_domain");
	check(fi_endpoint(p->domain, info, &p->ep, NULL), "fi_endpoint");
	check(fi_cq_open(p->domain, &cq_attr, &p->cq, NULL), "fi_cq_open");
	check(fi_ep_bind(p->ep, &p->ceq->fid, 0), "fi_ep_bind(eq)");
	check(fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
	check(fi_enable(p->ep), "fi_enable");
	p->inject_max = info->tx_attr->inject_size;
	p->mr_mode = info->domain_attr->mr_mode;
}

static void close_ep(struct fp *p)
{
	if (p->ep)
		fi_close(&p->ep->fid);
	if (p->mr)
		fi_close(&p->mr->fid);
	if (p->cq)
		fi_close(&p->cq->fid);
	if (p->domain)
		fi_close(&p->domain->fid);
	free(p->buf);
	p->ep = NULL;
	p->mr = NULL;
	p->cq = NULL;
	p->domain = NULL;
	p->buf = NULL;
}

/* Waits for one CM event of the wanted kind; dies on anything else. */
static void eq_expect(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *entry, size_t len)
{
	uint32_t event;
	ssize_t n = fi_eq_sread(eq, &event, entry, len, -1, 0);
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err;
		memset(&err, 0, sizeof(err));
		fi_eq_readerr(eq, &err, 0);
		die("connection: %s", fi_strerror(err.err));
	}
	if (n < 0)
		die("fi_eq_sread: %s", fi_strerror((int)-n));
	if (event != want)
		die("connection: unexpected event %u (wanted %u)", event, want);
}

/* ---- server ---- */

struct srv_state {
	struct fp *p;
	struct fp_hello h;
	uint64_t cpu0, cpu1, msgs, bytes;
	bool stop;
};

static void srv_on(void *arg, const struct fi_cq_data_entry *e)
{
	struct srv_state *s = arg;
	struct fp *p = s->p;
	if (!(e->flags & FI_RECV))
		return; /* a send (echo or result) completed */
	if (e->flags & FI_REMOTE_CQ_DATA) {
		if (e->data == FP_MARK) {
			s->cpu0 = cpu_ns();
			s->msgs = 0;
			s->bytes = 0;
		} else if (e->data == FP_STOP) {
			s->cpu1 = cpu_ns();
			s->stop = true;
			return; /* do not repost */
		}
	} else {
		s->msgs++;
		s->bytes += e->len;
	}
	post_retry(p, post_recv_data, NULL, srv_on, s, "fi_recv");
	if (s->h.test == FP_LAT && !(e->flags & FI_REMOTE_CQ_DATA))
		post_retry(p, post_send_data, NULL, srv_on, s, "fi_send(echo)");
}

static void serve_one(struct fp *p)
{
	union {
		struct fi_eq_cm_entry e;
		unsigned char raw[sizeof(struct fi_eq_cm_entry) + 256];
	} cm;
	struct srv_state s;
	memset(&s, 0, sizeof(s));
	s.p = p;

	eq_expect(p->eq, FI_CONNREQ, &cm.e, sizeof(cm));
	struct fi_info *info = cm.e.info;
	memcpy(&s.h, cm.e.data, sizeof(s.h));
	if (s.h.magic != FP_MAGIC || s.h.version != FP_VERSION || s.h.size == 0 ||
	    s.h.size > FP_MAX_SIZE || s.h.test < FP_WRITE || s.h.test > FP_LAT) {
		fi_reject(p->pep, info->handle, NULL, 0);
		fi_freeinfo(info);
		fprintf(stderr, "%s: rejected a malformed request\n", prog);
		return;
	}
	p->poll = s.h.flags & FP_FLAG_POLL;
	p->info = info;
	uint32_t depth = s.h.test == FP_SEND ? s.h.depth : 1;
	if (depth == 0 || depth > info->rx_attr->size)
		depth = (uint32_t)info->rx_attr->size;
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	check(fi_eq_open(p->fabric, &eq_attr, &p->ceq, NULL), "fi_eq_open");
	open_ep(p, info, 2 * (size_t)depth + 64);
	fp_alloc(p, s.h.size, FI_SEND | FI_RECV | FI_REMOTE_WRITE | FI_REMOTE_READ);
	for (uint32_t i = 0; i < depth; i++)
		check((int)post_recv_data(p, NULL), "fi_recv");

	struct fp_offer offer = {
		.magic = FP_MAGIC,
		.addr = (p->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)p->buf : 0,
		.key = fi_mr_key(p->mr),
	};
	check(fi_accept(p->ep, &offer, sizeof(offer)), "fi_accept");
	eq_expect(p->ceq, FI_CONNECTED, &cm.e, sizeof(cm));

	struct fi_cq_data_entry e[16];
	while (!s.stop) {
		size_t n = cq_get(p, e, 16);
		for (size_t i = 0; i < n; i++)
			srv_on(&s, &e[i]);
	}

	struct fp_result *r = result_slot(p);
	r->magic = FP_MAGIC;
	r->cpu_ns = s.cpu1 - s.cpu0;
	r->msgs = s.msgs;
	r->bytes = s.bytes;
	check((int)fi_send(p->ep, r, sizeof(*r), mr_desc(p), 0, NULL), "fi_send(result)");
	/* wait until the result left; then the client closes */
	for (bool sent = false; !sent;) {
		size_t n = cq_get(p, e, 16);
		for (size_t i = 0; i < n; i++)
			if (e[i].flags & FI_SEND)
				sent = true;
	}
	uint32_t event;
	(void)fi_eq_sread(p->ceq, &event, &cm.e, sizeof(cm), 2000, 0); /* FI_SHUTDOWN, best effort */
	close_ep(p);
	fi_close(&p->ceq->fid);
	p->ceq = NULL;
	fi_freeinfo(info);
	p->info = NULL;
}

static void run_server(const char *addr, const char *port, bool once)
{
	struct fp p;
	memset(&p, 0, sizeof(p));
	struct fi_info *hints = fp_hints(), *info = NULL;
	check(fi_getinfo(FI_VERSION(1, 9), addr, port, FI_SOURCE, hints, &info), "fi_getinfo");
	fi_freeinfo(hints);
	check(fi_fabric(info->fabric_attr, &p.fabric, NULL), "fi_fabric");
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	check(fi_eq_open(p.fabric, &eq_attr, &p.eq, NULL), "fi_eq_open");
	check(fi_passive_ep(p.fabric, info, &p.pep, NULL), "fi_passive_ep");
	check(fi_pep_bind(p.pep, &p.eq->fid, 0), "fi_pep_bind");
	check(fi_listen(p.pep), "fi_listen");
	fprintf(stderr, "%s: listening on %s port %s (provider %s)\n", prog, addr, port,
		info->fabric_attr->prov_name);
	fi_freeinfo(info);
	do
		serve_one(&p);
	while (!once);
	fi_close(&p.pep->fid);
	fi_close(&p.eq->fid);
	fi_close(&p.fabric->fid);
}

/* ---- client ---- */

struct cli_state {
	struct fp *p;
	enum fp_test test;
	uint64_t raddr, rkey;
	size_t outstanding; /* bandwidth: operations posted and not yet completed */
	uint64_t completed;
	bool got_recv; /* latency: the echo arrived */
	bool got_ctrl; /* the result arrived */
};

/* Operation contexts are tags telling the completions apart. */
static char ctx_ctrl, ctx_code;

static void cli_on(void *arg, const struct fi_cq_data_entry *e)
{
	struct cli_state *c = arg;
	if (e->flags & FI_RECV) {
		if (e->op_context == &ctx_ctrl)
			c->got_ctrl = true;
		else
			c->got_recv = true;
		return;
	}
	if (e->op_context == &ctx_code || c->test == FP_LAT)
		return; /* MARK/STOP, or a ping that was not injected */
	if (c->outstanding)
		c->outstanding--;
	c->completed++;
}

static ssize_t post_op(struct fp *p, void *arg)
{
	struct cli_state *c = arg;
	void *src = p->buf + p->size;
	switch (c->test) {
	case FP_WRITE:
		return fi_write(p->ep, src, p->size, mr_desc(p), 0, c->raddr, c->rkey, NULL);
	case FP_READ:
		return fi_read(p->ep, p->buf, p->size, mr_desc(p), 0, c->raddr, c->rkey, NULL);
	case FP_SEND:
		return fi_send(p->ep, src, p->size, mr_desc(p), 0, NULL);
	default:
		return -FI_EINVAL;
	}
}

static ssize_t post_ctrl_recv(struct fp *p, void *arg)
{
	(void)arg;
	return fi_recv(p->ep, result_slot(p), sizeof(struct fp_result), mr_desc(p), 0, &ctx_ctrl);
}

static ssize_t post_code(struct fp *p, void *arg)
{
	const uint64_t *code = arg;
	return fi_senddata(p->ep, NULL, 0, NULL, *code, 0, &ctx_code);
}

static void send_code(struct cli_state *c, uint64_t code)
{
	post_retry(c->p, post_code, &code, cli_on, c, "fi_senddata");
}

/* Bandwidth phase: keeps `depth` operations in flight for `secs` seconds or `iters`
 * operations, then drains. Returns the number of operations completed in the phase. */
static uint64_t bw_phase(struct cli_state *c, size_t depth, double secs, uint64_t iters)
{
	struct fp *p = c->p;
	uint64_t posted = 0, start_done = c->completed;
	double end = now_s() + secs;
	bool more = true;
	struct fi_cq_data_entry e[64];
	while (more || c->outstanding) {
		while (more && c->outstanding < depth) {
			ssize_t ret = post_op(p, c);
			if (ret == -FI_EAGAIN)
				break;
			if (ret)
				die("post: %s", fi_strerror((int)-ret));
			c->outstanding++;
			posted++;
			if (iters ? posted >= iters : (posted & 15) == 0 && now_s() >= end)
				more = false;
		}
		size_t n = (more && c->outstanding < depth) ? cq_try(p, e, 64) : cq_get(p, e, 64);
		for (size_t i = 0; i < n; i++)
			cli_on(c, &e[i]);
		if (more && !iters && now_s() >= end)
			more = false;
	}
	return c->completed - start_done;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Latency phase: ping-pong; stores one-way times (half round trip) in ns. */
static uint64_t lat_phase(struct cli_state *c, double secs, uint64_t iters, uint64_t *samples,
			  size_t max_samples)
{
	struct fp *p = c->p;
	struct fi_cq_data_entry e[8];
	double end = now_s() + secs;
	uint64_t done = 0;
	for (;;) {
		if (iters ? done >= iters : now_s() >= end)
			break;
		struct timespec t0, t1;
		c->got_recv = false;
		post_retry(p, post_recv_data, NULL, cli_on, c, "fi_recv");
		clock_gettime(CLOCK_MONOTONIC, &t0);
		post_retry(p, post_send_data, NULL, cli_on, c, "fi_send");
		while (!c->got_recv) {
			size_t n = cq_get(p, e, 8);
			for (size_t i = 0; i < n; i++)
				cli_on(c, &e[i]);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		uint64_t rtt = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			       (uint64_t)(t1.tv_nsec - t0.tv_nsec);
		if (samples && done < max_samples)
			samples[done] = rtt / 2;
		done++;
	}
	/* reap the remaining send completions, if any (inject produces none) */
	while (cq_try(p, e, 8))
		;
	return done;
}

static const char *test_name(enum fp_test t)
{
	static const char *names[] = { [FP_WRITE] = "write", [FP_READ] = "read",
				       [FP_SEND] = "send", [FP_LAT] = "lat" };
	return names[t];
}

static void run_client(const char *addr, const char *port, enum fp_test test, size_t size,
		       double secs, uint64_t iters, size_t depth, bool poll, double warm)
{
	struct fp p;
	memset(&p, 0, sizeof(p));
	p.poll = poll;
	struct fi_info *hints = fp_hints(), *info = NULL;
	check(fi_getinfo(FI_VERSION(1, 9), addr, port, 0, hints, &info), "fi_getinfo");
	fi_freeinfo(hints);
	p.info = info;
	check(fi_fabric(info->fabric_attr, &p.fabric, NULL), "fi_fabric");
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	check(fi_eq_open(p.fabric, &eq_attr, &p.eq, NULL), "fi_eq_open");
	p.ceq = p.eq;
	if (depth > info->tx_attr->size)
		depth = info->tx_attr->size;
	open_ep(&p, info, 2 * depth + 64);
	fp_alloc(&p, size, FI_SEND | FI_RECV | FI_READ | FI_WRITE);

	struct fp_hello hello = {
		.magic = FP_MAGIC,
		.version = FP_VERSION,
		.test = test,
		.flags = poll ? FP_FLAG_POLL : 0,
		.size = size,
		.depth = (uint32_t)depth,
	};
	check(fi_connect(p.ep, info->dest_addr, &hello, sizeof(hello)), "fi_connect");
	union {
		struct fi_eq_cm_entry e;
		unsigned char raw[sizeof(struct fi_eq_cm_entry) + 256];
	} cm;
	eq_expect(p.ceq, FI_CONNECTED, &cm.e, sizeof(cm));
	struct fp_offer offer;
	memcpy(&offer, cm.e.data, sizeof(offer));
	if (offer.magic != FP_MAGIC)
		die("connection: the server's offer is malformed");

	struct cli_state c = { .p = &p, .test = test, .raddr = offer.addr, .rkey = offer.key };
	uint64_t *samples = NULL;
	size_t max_samples = 0;
	if (test == FP_LAT) {
		max_samples = iters ? (size_t)iters : FP_MAX_SAMPLES;
		if (max_samples > FP_MAX_SAMPLES)
			max_samples = FP_MAX_SAMPLES;
		samples = calloc(max_samples, sizeof(*samples));
		if (!samples)
			die("out of memory for samples");
	}

	/* warm-up */
	if (test == FP_LAT)
		lat_phase(&c, warm, 0, NULL, 0);
	else
		bw_phase(&c, depth, warm, 0);
	send_code(&c, FP_MARK);

	/* timed phase */
	uint64_t cpu0 = cpu_ns();
	double t0 = now_s();
	uint64_t ops = test == FP_LAT ? lat_phase(&c, secs, iters, samples, max_samples)
				      : bw_phase(&c, depth, secs, iters);
	double t_ops = now_s();
	/* STOP travels behind the payload on the same stream: its answer proves that every
	 * written or sent byte reached the server. */
	post_retry(&p, post_ctrl_recv, NULL, cli_on, &c, "fi_recv(result)");
	send_code(&c, FP_STOP);
	struct fi_cq_data_entry e[8];
	while (!c.got_ctrl) {
		size_t n = cq_get(&p, e, 8);
		for (size_t i = 0; i < n; i++)
			cli_on(&c, &e[i]);
	}
	double t1 = now_s();
	uint64_t cpu1 = cpu_ns();
	struct fp_result r = *result_slot(&p);

	double elapsed = (test == FP_READ || test == FP_LAT) ? t_ops - t0 : t1 - t0;
	double bytes = (double)ops * (double)size;
	printf("{\"tool\":\"fi_peer\",\"provider\":\"%s\",\"test\":\"%s\",\"size\":%zu,"
	       "\"depth\":%zu,\"poll\":%s,\"ops\":%" PRIu64 ",\"seconds\":%.6f,",
	       info->fabric_attr->prov_name, test_name(test), size,
	       test == FP_LAT ? (size_t)1 : depth, poll ? "true" : "false", ops, elapsed);
	if (test == FP_LAT) {
		size_t n = ops < max_samples ? (size_t)ops : max_samples;
		qsort(samples, n, sizeof(*samples), cmp_u64);
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += (double)samples[i];
		printf("\"lat_us_p50\":%.3f,\"lat_us_avg\":%.3f,\"lat_us_p99\":%.3f,",
		       n ? (double)samples[n / 2] / 1e3 : 0.0, n ? sum / (double)n / 1e3 : 0.0,
		       n ? (double)samples[(n * 99) / 100] / 1e3 : 0.0);
	} else {
		printf("\"gbytes_per_s\":%.6g,", elapsed > 0 ? bytes / elapsed / 1e9 : 0.0);
	}
	double ccpu = (double)(cpu1 - cpu0), scpu = (double)r.cpu_ns;
	printf("\"client_cpu_s\":%.6f,\"server_cpu_s\":%.6f,\"cpu_ns_per_byte\":%.5f,"
	       "\"server_msgs\":%" PRIu64 ",\"server_bytes\":%" PRIu64 "}\n",
	       ccpu / 1e9, scpu / 1e9, bytes > 0 ? (ccpu + scpu) / bytes : 0.0, r.msgs, r.bytes);
	if (test == FP_SEND && (r.msgs != ops || r.bytes != ops * size))
		die("the server received %" PRIu64 " messages, %" PRIu64 " bytes; %" PRIu64 " were sent",
		    r.msgs, r.bytes, ops);
	fflush(stdout);

	free(samples);
	fi_shutdown(p.ep, 0);
	close_ep(&p);
	fi_close(&p.eq->fid);
	fi_close(&p.fabric->fid);
	fi_freeinfo(info);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s -s [-a ADDR] [-p PORT] [-1]\n"
		"       %s -c ADDR [-p PORT] -t write|read|send|lat [-z SIZE] [-D SECONDS | -n ITERS]\n"
		"                  [-d DEPTH] [-w WARMUP_SECONDS] [--poll]\n"
		"Loopback only (127.0.0.0/8, ::1); libfabric provider \"tcp\", FI_EP_MSG endpoint.\n"
		"Default port %s, size 65536, 2 seconds, depth 32 (bandwidth), warm-up 0.2 s.\n",
		prog, prog, FP_DEFAULT_PORT);
}

static size_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad size '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	default: break;
	}
	if (*end || v == 0 || v > FP_MAX_SIZE)
		die("bad size '%s' (1 byte to 64 MiB)", s);
	return (size_t)v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "poll", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool server = false, once = false, poll = false;
	const char *addr = NULL, *port = FP_DEFAULT_PORT;
	enum fp_test test = FP_WRITE;
	size_t size = 65536, depth = 32;
	double secs = 2.0, warm = 0.2;
	uint64_t iters = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "sc:a:p:1t:z:D:n:d:w:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': server = true; break;
		case 'c': addr = optarg; break;
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case '1': once = true; break;
		case 't':
			if (!strcmp(optarg, "write")) test = FP_WRITE;
			else if (!strcmp(optarg, "read")) test = FP_READ;
			else if (!strcmp(optarg, "send")) test = FP_SEND;
			else if (!strcmp(optarg, "lat")) test = FP_LAT;
			else die("unknown test '%s' (write, read, send, lat)", optarg);
			break;
		case 'z': size = parse_size(optarg); break;
		case 'D': secs = strtod(optarg, NULL); break;
		case 'n': iters = strtoull(optarg, NULL, 0); break;
		case 'd': depth = (size_t)strtoul(optarg, NULL, 0); break;
		case 'w': warm = strtod(optarg, NULL); break;
		case 'P': poll = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (!server && !addr)) {
		usage(stderr);
		return 2;
	}
	if (!addr)
		addr = "127.0.0.1";
	if (!is_loopback(addr))
		die("%s is not a loopback address; this peer stays on 127.0.0.0/8 or ::1", addr);
	if (secs <= 0 || warm < 0 || depth == 0)
		die("bad duration, warm-up or depth");
	if (server)
		run_server(addr, port, once);
	else
		run_client(addr, port, test, size, secs, iters, depth, poll, warm);
	return 0;
}
