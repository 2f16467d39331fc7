/* protolab-blockdev: one file served through FUSE with a device model applied to every request.
 *
 * The lab's pool image is exposed as <mountpoint>/disk; the loop device and btrfs sit on top, so the local
 * path and every protocol server see the same "array". Each read or write is done at once on the backing
 * file (in RAM), then answered at the time the model gives it:
 *   - parallelism N servers, FIFO: a request starts when the earliest-free server is free (queueing);
 *   - service time drawn uniformly from [mean - spread, mean + spread] (spread 0: fixed);
 *   - an optional throughput cap: the transfer (bytes / rate) follows service on one shared channel;
 *   - an optional LRU read cache of 4 KiB blocks: a read whose blocks are all cached skips the model;
 *   - an optional write-back cache (an array's NVRAM): a write is acknowledged after WRITE_NS and holds no server
 *     and no channel (destaged later in full stripes); WRITE_NS 0: writes are served like reads;
 *   - a stall (an array that stops answering for a while): no request is answered before the stall ends;
 *   - a corrupted byte range: a read overlapping it returns those bytes flipped (the backing file keeps them).
 * "overhead" is the time the rest of the stack (fio, btrfs, loop, FUSE) adds to a request (measured by protolab):
 * each request counts as issued that much before it arrived here, so the host sees the model's service time at 1
 * outstanding I/O while each server is still held for the whole service time (saturation unchanged).
 *
 * Runtime control, by setxattr on the disk file (protolab's own, root's):
 *   - "user.protolab.calibrate" = NS: every request is answered NS after it arrived, then the transfer at the
 *     throughput cap, with no cache, no write-back, no queueing and no overhead (what protolab measures the stack's
 *     overhead against); "off": the model again;
 *   - "user.protolab.overhead" = NS: the overhead;
 *   - "user.protolab.write_overhead" = NS: the overhead of a write acknowledged from the write-back cache (the
 *     stack's time depends on how long a request is held, and those writes are held WRITE_NS, not the service time);
 *   - "user.protolab.model" = "KEY=VALUE ..." (service, spread, write in ns; parallelism up to MAX_SERVERS; rate in
 *     bytes/s): the model's figures from now on, the others kept; every server and the channel start free (the
 *     caller quiesces the device first). A key not known, a value out of range or a spread above the service time
 *     is refused whole (EINVAL). getxattr of it reads the model in effect in the same form;
 *   - "user.protolab.stall" = NS (at most MAX_STALL_NS): the array stalls until now + NS: every request pending or
 *     arriving before then is answered no earlier than then (a request's own due time still counts: the later of
 *     the two). A later stall extends it, never shortens it; "0" ends it at once. getxattr reads the nanoseconds
 *     left (0: none);
 *   - "user.protolab.corrupt" = "OFFSET LENGTH" (bytes, within the disk, LENGTH > 0): every read overlapping
 *     [OFFSET, OFFSET + LENGTH) returns the bytes in that range XOR 0xff, the backing file untouched (writes land
 *     as written); "" clears it. getxattr reads it back in the same form ("" when none).
 * And by getxattr only:
 *   - "user.protolab.stats": "reads=N writes=N queue_ns=N service_ns=N", cumulative since the start (never reset:
 *     the caller takes differences, e.g. around a measured window): requests answered, by kind, and the sums over
 *     them of the time queued (arrival → service start: waiting for a free server) and of the time served (service
 *     start → the answer: the service time, the transfer and its wait for the channel, a stall, the timer's
 *     lateness). A request's arrival is the model's (issued: "overhead" before it reached the daemon, as the model
 *     counts it), so at 1 outstanding I/O its queue is 0 and its service the model's service time. Cache hits,
 *     write-back acknowledgements, calibrating requests and failed ones count too, with no queue and their own
 *     time. The answering thread adds to the sums under the device's lock, which the read takes too: a read is
 *     one consistent instant.
 *
 * One thread reads /dev/fuse (libfuse's single-threaded loop); one thread answers requests when they are due.
 * max_background is raised at INIT so that the kernel keeps many asynchronous (loop direct-I/O) requests in
 * flight; the default (12) would cap the device's parallelism.
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DISK_INO 2
#define MAX_SERVERS 1024 /* protolab's plan.storage.MAX_PARALLELISM: free_at is allocated for it once */
#define CACHE_BLOCK 4096ULL
#define MAX_STALL_NS 3.6e12 /* an hour: protolab's faults last at most 300 s */

static const char *disk_name;

static struct {
	int fd;
	uint64_t size;
	double service_ns, spread_ns, overhead_ns, rate_bps; /* rate in bytes per second, 0: none */
	double write_ns, write_overhead_ns; /* write-back acknowledgement time (0: none), and its overhead */
	double calibrate_ns; /* calibrating: every request takes this (then its transfer); < 0: the model */
	int parallelism;
	uint64_t *free_at; /* per server: when it is next free (ns) */
	uint64_t channel_free;
	uint64_t stall_until; /* no answer before this (ns, CLOCK_MONOTONIC); 0: no stall */
	uint64_t corrupt_off, corrupt_len; /* reads of this byte range come back flipped; len 0: none */
	uint64_t rng;
	struct { uint64_t reads, writes, queue_ns, service_ns; } stats; /* user.protolab.stats, cumulative */
	pthread_mutex_t lock;
	pthread_cond_t due;
	int stopping;
} dev = {.fd = -1, .calibrate_ns = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double uniform01(void) /* xorshift64*, under dev.lock */
{
	dev.rng ^= dev.rng >> 12;
	dev.rng ^= dev.rng << 25;
	dev.rng ^= dev.rng >> 27;
	return (double)((dev.rng * 2685821657736338717ULL) >> 11) / (double)(1ULL << 53);
}

/* ---- LRU read cache of 4 KiB blocks (open addressing + doubly linked list, all under dev.lock) ---- */
static struct {
	uint64_t capacity, used, slots;
	uint64_t *key;          /* block number + 1; 0: empty slot (linear probing, no tombstones) */
	uint32_t *node_of_slot; /* slot -> node */
	uint64_t *node_key;
	uint32_t *prev, *next;  /* node list, most recent at head */
	uint32_t head, tail;
} cache;

static uint64_t slot_home(uint64_t k)
{
	return (k * 11400714819323198485ULL) % cache.slots;
}

static uint64_t slot_find(uint64_t k, int *found)
{
	uint64_t i = slot_home(k);
	while (cache.key[i] != 0) {
		if (cache.key[i] == k) {
			*found = 1;
			return i;
		}
		i = (i + 1) % cache.slots;
	}
	*found = 0;
	return i;
}

/* Empty slot i, moving the later keys of its probe run back into the hole. Deleted slots used to be marked
 * (tombstones) and were reused only on an insert's own probe path, so under eviction churn they took every empty
 * slot, and the lookup of a block not cached then never ended: a 64 MiB write through an 8 MiB cache hung the
 * daemon (spinning under its lock) and every I/O with it (tests/lab/test_device_cache.py, 2026-11-28). */
static void slot_delete(uint64_t i)
{
	for (uint64_t j = (i + 1) % cache.slots; cache.key[j] != 0; j = (j + 1) % cache.slots) {
		uint64_t h = slot_home(cache.key[j]);
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue; /* its home lies cyclically in (i, j]: it cannot move before it */
		cache.key[i] = cache.key[j];
		cache.node_of_slot[i] = cache.node_of_slot[j];
		i = j;
	}
	cache.key[i] = 0;
}

static void list_unlink(uint32_t n)
{
	if (cache.prev[n] != UINT32_MAX) cache.next[cache.prev[n]] = cache.next[n]; else cache.head = cache.next[n];
	if (cache.next[n] != UINT32_MAX) cache.prev[cache.next[n]] = cache.prev[n]; else cache.tail = cache.prev[n];
}

static void list_push(uint32_t n)
{
	cache.prev[n] = UINT32_MAX;
	cache.next[n] = cache.head;
	if (cache.head != UINT32_MAX) cache.prev[cache.head] = n;
	cache.head = n;
	if (cache.tail == UINT32_MAX) cache.tail = n;
}

/* Whether every block of [off, off+len) is cached; touches (and, with insert, adds) them. */
static int cache_access(uint64_t off, uint64_t len, int insert)
{
	if (cache.capacity == 0 || len == 0)
		return 0;
	int all = 1;
	for (uint64_t b = off / CACHE_BLOCK; b <= (off + len - 1) / CACHE_BLOCK; b++) {
		int found;
		uint64_t k = b + 1, s = slot_find(k, &found);
		if (found) {
			uint32_t n = cache.node_of_slot[s];
			list_unlink(n);
			list_push(n);
			continue;
		}
		all = 0;
		if (!insert)
			continue;
		uint32_t n;
		if (cache.used < cache.capacity) {
			n = (uint32_t)cache.used++;
		} else { /* evict the least recent */
			n = cache.tail;
			int f;
			slot_delete(slot_find(cache.node_key[n], &f));
			list_unlink(n);
			s = slot_find(k, &found);
		}
		cache.key[s] = k;
		cache.node_of_slot[s] = n;
		cache.node_key[n] = k;
		list_push(n);
	}
	return all;
}

static int cache_init(uint64_t bytes)
{
	cache.capacity = bytes / CACHE_BLOCK;
	cache.head = cache.tail = UINT32_MAX;
	if (cache.capacity == 0)
		return 0;
	if (cache.capacity >= UINT32_MAX / 2)
		return -1;
	cache.slots = cache.capacity * 2 + 1;
	cache.key = calloc(cache.slots, sizeof *cache.key);
	cache.node_of_slot = calloc(cache.slots, sizeof *cache.node_of_slot);
	cache.node_key = calloc(cache.capacity, sizeof *cache.node_key);
	cache.prev = calloc(cache.capacity, sizeof *cache.prev);
	cache.next = calloc(cache.capacity, sizeof *cache.next);
	return cache.key && cache.node_of_slot && cache.node_key && cache.prev && cache.next ? 0 : -1;
}

/* ---- the model: when a request that arrives now is answered ---- */
static uint64_t transfer_ns(uint64_t bytes)
{
	return dev.rate_bps > 0 ? (uint64_t)(1e9 * (double)bytes / dev.rate_bps) : 0;
}

/* The answer's due time; *issued and *start: when the model counts the request as arrived and as started (its
 * queue is the time between them). */
static uint64_t completion(uint64_t arrival, uint64_t bytes, int hit, int is_write, uint64_t *issued_at,
			   uint64_t *start_at)
{
	*issued_at = *start_at = arrival;
	if (dev.calibrate_ns >= 0)
		return arrival + (uint64_t)dev.calibrate_ns + transfer_ns(bytes);
	if (hit)
		return arrival;
	if (is_write && dev.write_ns > 0) {
		uint64_t early = (uint64_t)dev.write_overhead_ns;
		uint64_t issued = arrival > early ? arrival - early : 0;
		uint64_t done = issued + (uint64_t)dev.write_ns;
		*issued_at = *start_at = issued;
		return done > arrival ? done : arrival;
	}
	int best = 0;
	for (int i = 1; i < dev.parallelism; i++)
		if (dev.free_at[i] < dev.free_at[best])
			best = i;
	double s = dev.service_ns;
	if (dev.spread_ns > 0)
		s += (2.0 * uniform01() - 1.0) * dev.spread_ns;
	uint64_t issued = arrival > (uint64_t)dev.overhead_ns ? arrival - (uint64_t)dev.overhead_ns : 0;
	uint64_t start = dev.free_at[best] > issued ? dev.free_at[best] : issued;
	uint64_t done = start + (uint64_t)s;
	*issued_at = issued;
	*start_at = start;
	dev.free_at[best] = done;
	if (dev.rate_bps > 0) {
		uint64_t begin = dev.channel_free > done ? dev.channel_free : done;
		dev.channel_free = begin + transfer_ns(bytes);
		done = dev.channel_free;
	}
	return done;
}

/* ---- pending answers: a min-heap on due time ---- */
struct pending {
	uint64_t due;
	uint64_t issued, start; /* for user.protolab.stats: the model's arrival and service start */
	fuse_req_t req;
	char *buf; /* read data (NULL: a write) */
	size_t len;
	int err;
	int is_read;
};
static struct pending *heap;
static size_t heap_n, heap_cap;

static void heap_push(struct pending p)
{
	if (heap_n == heap_cap) {
		heap_cap = heap_cap ? heap_cap * 2 : 256;
		heap = realloc(heap, heap_cap * sizeof *heap);
		if (!heap)
			abort();
	}
	size_t i = heap_n++;
	while (i > 0 && heap[(i - 1) / 2].due > p.due) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = p;
}

static struct pending heap_pop(void)
{
	struct pending top = heap[0], last = heap[--heap_n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= heap_n)
			break;
		if (c + 1 < heap_n && heap[c + 1].due < heap[c].due)
			c++;
		if (heap[c].due >= last.due)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (heap_n)
		heap[i] = last;
	return top;
}

static void answer(struct pending p)
{
	if (p.err)
		fuse_reply_err(p.req, p.err);
	else if (p.buf)
		fuse_reply_buf(p.req, p.buf, p.len);
	else
		fuse_reply_write(p.req, p.len);
	free(p.buf);
}

/* A woken thread runs late by the kernel's timer and scheduling latency; the answerer learns that lateness
 * (a moving average) and wakes that much earlier, so answers are due on average when the model says. A wake later
 * than LATE_CAP_FACTOR times the average (at least LATE_FLOOR_NS) is a stall, not the timer's lateness, and counts
 * as that bound. Unbounded, one wake 6.3 ms late raised the average to 413 us (measured 2026-11-28): answers then
 * came up to that much early until later waits brought it down, and while it stays above the ~85 us a flash request
 * waits at 1 outstanding I/O, such requests are answered at once and teach it nothing. */
#define LATE_FLOOR_NS 100000.0
#define LATE_CAP_FACTOR 4.0
static void real_time(void)
{
	struct sched_param sp = {.sched_priority = 10};
	prctl(PR_SET_TIMERSLACK, 1UL); /* the default 50 us slack would add to every service time */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); /* best effort: without it, answers come later */
}

static void *answerer(void *arg)
{
	(void)arg;
	double late_ns = 0;
	real_time();
	pthread_mutex_lock(&dev.lock);
	while (!dev.stopping || heap_n) {
		if (!heap_n) {
			pthread_cond_wait(&dev.due, &dev.lock);
			continue;
		}
		uint64_t hold = dev.stopping ? 0 : dev.stall_until; /* stopping: a stall keeps no answer back */
		uint64_t t = now_ns(), due = heap[0].due > hold ? heap[0].due : hold;
		uint64_t wake = due - (uint64_t)late_ns;
		if (wake > t) {
			struct timespec ts = {.tv_sec = wake / 1000000000ULL, .tv_nsec = wake % 1000000000ULL};
			if (pthread_cond_timedwait(&dev.due, &dev.lock, &ts) == ETIMEDOUT) {
				double late = (double)now_ns() - (double)wake;
				double cap = late_ns * LATE_CAP_FACTOR > LATE_FLOOR_NS ? late_ns * LATE_CAP_FACTOR : LATE_FLOOR_NS;
				late_ns += ((late < cap ? late : cap) - late_ns) / 16;
				if (late_ns < 0)
					late_ns = 0;
			}
			continue;
		}
		struct pending p = heap_pop();
		if (p.is_read)
			dev.stats.reads++;
		else
			dev.stats.writes++;
		dev.stats.queue_ns += p.start - p.issued;
		dev.stats.service_ns += t > p.start ? t - p.start : 0; /* t: now, as it is answered */
		pthread_mutex_unlock(&dev.lock);
		answer(p);
		pthread_mutex_lock(&dev.lock);
	}
	pthread_mutex_unlock(&dev.lock);
	return NULL;
}

static void schedule(fuse_req_t req, char *buf, size_t len, int err, uint64_t off, int is_read)
{
	uint64_t arrival = now_ns();
	pthread_mutex_lock(&dev.lock);
	int hit = err ? 1 : dev.calibrate_ns < 0 && cache_access(off, len, 1) && is_read;
	struct pending p = {.req = req, .buf = buf, .len = len, .err = err, .is_read = is_read};
	p.due = completion(arrival, len, hit, !is_read, &p.issued, &p.start);
	int earliest = heap_n == 0 || p.due < heap[0].due;
	heap_push(p);
	if (earliest)
		pthread_cond_signal(&dev.due);
	pthread_mutex_unlock(&dev.lock);
}

/* ---- FUSE operations: a root directory holding one file ---- */
static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)dev.size;
		st->st_blocks = (blkcnt_t)(dev.size / 512);
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_background = 1024;
	conn->congestion_threshold = 768;
	conn->max_write = 1024 * 1024;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (parent != FUSE_ROOT_ID || strcmp(name, disk_name) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct fuse_entry_param e = {.ino = DISK_INO, .attr_timeout = 3600, .entry_timeout = 3600};
	fill_attr(DISK_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	if (ino != FUSE_ROOT_ID && ino != DISK_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char buf[512];
	size_t n = 0;
	const char *names[] = {".", "..", disk_name};
	fuse_ino_t inos[] = {FUSE_ROOT_ID, FUSE_ROOT_ID, DISK_INO};
	for (off_t i = off; i < 3; i++) {
		struct stat st = {.st_ino = inos[i], .st_mode = i == 2 ? S_IFREG : S_IFDIR};
		size_t want = fuse_add_direntry(req, buf + n, sizeof buf - n, names[i], &st, i + 1);
		if (n + want > size || n + want > sizeof buf)
			break;
		n += want;
	}
	fuse_reply_buf(req, buf, n);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DISK_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1; /* no page cache above the model: the model's cache is the only one */
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

/* Flip the bytes of [off, off+len) that lie in the corrupted range (none: nothing). */
static void corrupt(char *buf, uint64_t len, uint64_t off)
{
	pthread_mutex_lock(&dev.lock);
	uint64_t c0 = dev.corrupt_off, c1 = dev.corrupt_off + dev.corrupt_len;
	pthread_mutex_unlock(&dev.lock);
	uint64_t from = off > c0 ? off : c0, to = off + len < c1 ? off + len : c1;
	for (uint64_t i = from; i < to; i++)
		buf[i - off] ^= (char)0xff;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if ((uint64_t)off >= dev.size)
		size = 0;
	else if ((uint64_t)off + size > dev.size)
		size = dev.size - (uint64_t)off;
	char *buf = malloc(size ? size : 1);
	ssize_t got = size ? pread(dev.fd, buf, size, off) : 0;
	if (got < 0) {
		free(buf);
		schedule(req, NULL, 0, errno, (uint64_t)off, 1);
		return;
	}
	corrupt(buf, (uint64_t)got, (uint64_t)off);
	schedule(req, buf, (size_t)got, 0, (uint64_t)off, 1);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if ((uint64_t)off + size > dev.size) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	ssize_t put = pwrite(dev.fd, data, size, off);
	schedule(req, NULL, put < 0 ? 0 : (size_t)put, put < 0 ? errno : 0, (uint64_t)off, 0);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	op_ok(req, ino, fi);
}

#define XATTR_CALIBRATE "user.protolab.calibrate"
#define XATTR_OVERHEAD "user.protolab.overhead"
#define XATTR_WRITE_OVERHEAD "user.protolab.write_overhead"
#define XATTR_MODEL "user.protolab.model"
#define XATTR_STALL "user.protolab.stall"
#define XATTR_CORRUPT "user.protolab.corrupt"
#define XATTR_STATS "user.protolab.stats"

/* "service=150000 parallelism=8": each known key sets its figure (all or nothing); 0 or -1 (EINVAL). */
static int set_model(const char *text)
{
	double service = dev.service_ns, spread = dev.spread_ns, rate = dev.rate_bps, write = dev.write_ns;
	double parallelism = dev.parallelism;
	char buf[256], *save = NULL;
	if (strlen(text) >= sizeof buf)
		return -1;
	strcpy(buf, text);
	for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), *end;
		if (!eq)
			return -1;
		*eq = 0;
		double v = strtod(eq + 1, &end);
		if (end == eq + 1 || *end || !(v >= 0 && v <= 1e10))
			return -1;
		if (strcmp(tok, "service") == 0) service = v;
		else if (strcmp(tok, "spread") == 0) spread = v;
		else if (strcmp(tok, "rate") == 0) rate = v;
		else if (strcmp(tok, "write") == 0) write = v;
		else if (strcmp(tok, "parallelism") == 0) parallelism = v;
		else return -1;
	}
	if (spread > service || parallelism < 1 || parallelism > MAX_SERVERS || parallelism != (int)parallelism)
		return -1;
	pthread_mutex_lock(&dev.lock);
	dev.service_ns = service;
	dev.spread_ns = spread;
	dev.rate_bps = rate;
	dev.write_ns = write;
	dev.parallelism = (int)parallelism;
	memset(dev.free_at, 0, MAX_SERVERS * sizeof *dev.free_at);
	dev.channel_free = 0;
	pthread_mutex_unlock(&dev.lock);
	return 0;
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	int model = strcmp(name, XATTR_MODEL) == 0, stall = strcmp(name, XATTR_STALL) == 0;
	int stats = strcmp(name, XATTR_STATS) == 0;
	if (ino != DISK_INO || (!model && !stall && !stats && strcmp(name, XATTR_CORRUPT) != 0)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	char text[256];
	int n = 0;
	pthread_mutex_lock(&dev.lock);
	if (model) {
		n = snprintf(text, sizeof text, "service=%.0f spread=%.0f parallelism=%d rate=%.0f write=%.0f",
			     dev.service_ns, dev.spread_ns, dev.parallelism, dev.rate_bps, dev.write_ns);
	} else if (stats) {
		n = snprintf(text, sizeof text, "reads=%llu writes=%llu queue_ns=%llu service_ns=%llu",
			     (unsigned long long)dev.stats.reads, (unsigned long long)dev.stats.writes,
			     (unsigned long long)dev.stats.queue_ns, (unsigned long long)dev.stats.service_ns);
	} else if (stall) {
		uint64_t t = now_ns();
		n = snprintf(text, sizeof text, "%llu",
			     (unsigned long long)(dev.stall_until > t ? dev.stall_until - t : 0));
	} else if (dev.corrupt_len) {
		n = snprintf(text, sizeof text, "%llu %llu", (unsigned long long)dev.corrupt_off,
			     (unsigned long long)dev.corrupt_len);
	}
	pthread_mutex_unlock(&dev.lock);
	if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else if (size < (size_t)n)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, (size_t)n);
}

/* "OFFSET LENGTH" within the disk (LENGTH > 0), or "" (none): 0, or -1 (EINVAL). */
static int set_corrupt(const char *value, size_t size)
{
	char text[64], *end, *rest;
	if (size >= sizeof text)
		return -1;
	memcpy(text, value, size);
	text[size] = 0;
	uint64_t off = 0, len = 0;
	if (size) {
		if (text[0] < '0' || text[0] > '9')
			return -1;
		errno = 0;
		off = strtoull(text, &rest, 10);
		if (*rest != ' ' || rest[1] < '0' || rest[1] > '9')
			return -1;
		len = strtoull(rest + 1, &end, 10);
		if (errno || *end || len == 0 || off >= dev.size || len > dev.size - off)
			return -1;
	}
	pthread_mutex_lock(&dev.lock);
	dev.corrupt_off = off;
	dev.corrupt_len = len;
	pthread_mutex_unlock(&dev.lock);
	return 0;
}

/* Runtime control (see the top): NS, "off" for calibrate, "OFFSET LENGTH" or "" for corrupt; anything else is
 * refused (EINVAL, ENOTSUP). */
static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	(void)flags;
	int calibrate = strcmp(name, XATTR_CALIBRATE) == 0, write = strcmp(name, XATTR_WRITE_OVERHEAD) == 0;
	int model = strcmp(name, XATTR_MODEL) == 0, stall = strcmp(name, XATTR_STALL) == 0;
	int corrupted = strcmp(name, XATTR_CORRUPT) == 0;
	if (ino != DISK_INO || (!calibrate && !write && !model && !stall && !corrupted
				&& strcmp(name, XATTR_OVERHEAD) != 0)) {
		fuse_reply_err(req, ENOTSUP);
		return;
	}
	if (corrupted) {
		fuse_reply_err(req, set_corrupt(value, size) == 0 ? 0 : EINVAL);
		return;
	}
	if (model) {
		char spec[256];
		if (size == 0 || size >= sizeof spec) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(spec, value, size);
		spec[size] = 0;
		fuse_reply_err(req, set_model(spec) == 0 ? 0 : EINVAL);
		return;
	}
	char text[32], *end = text;
	if (size == 0 || size >= sizeof text) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(text, value, size);
	text[size] = 0;
	int off = calibrate && strcmp(text, "off") == 0;
	double ns = off ? -1 : strtod(text, &end);
	if (!off && (end == text || *end || !(ns >= 0 && ns <= (stall ? MAX_STALL_NS : 1e10)))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&dev.lock);
	if (stall) {
		uint64_t until = ns > 0 ? now_ns() + (uint64_t)ns : 0;
		if (until == 0 || until > dev.stall_until)
			dev.stall_until = until;
		pthread_cond_signal(&dev.due); /* the answerer waits again, for the new end */
	} else if (calibrate)
		dev.calibrate_ns = ns;
	else if (write)
		dev.write_overhead_ns = ns;
	else
		dev.overhead_ns = ns;
	pthread_mutex_unlock(&dev.lock);
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init, .lookup = op_lookup, .getattr = op_getattr, .readdir = op_readdir, .open = op_open,
	.read = op_read, .write = op_write, .flush = op_ok, .release = op_ok, .fsync = op_fsync,
	.setxattr = op_setxattr, .getxattr = op_getxattr,
};

static int usage(const char *why)
{
	fprintf(stderr, "protolab-blockdev: %s\nusage: protolab-blockdev MOUNTPOINT BACKING DISK_NAME SERVICE_NS SPREAD_NS "
			"PARALLELISM RATE_BYTES_PER_S CACHE_BYTES OVERHEAD_NS WRITE_NS\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc != 11)
		return usage("wrong number of arguments");
	const char *mnt = argv[1], *backing = argv[2];
	disk_name = argv[3];
	char *end;
	dev.service_ns = strtod(argv[4], &end);
	dev.spread_ns = strtod(argv[5], &end);
	dev.parallelism = atoi(argv[6]);
	dev.rate_bps = strtod(argv[7], &end);
	double cache_bytes = strtod(argv[8], &end);
	dev.overhead_ns = strtod(argv[9], &end);
	dev.write_ns = strtod(argv[10], &end);
	dev.write_overhead_ns = dev.overhead_ns; /* until protolab measures the writes' own */
	if (!*disk_name || strchr(disk_name, '/'))
		return usage("the disk name must be one file name");
	if (dev.service_ns < 0 || dev.spread_ns < 0 || dev.spread_ns > dev.service_ns || dev.parallelism < 1
	    || dev.parallelism > MAX_SERVERS	    || dev.rate_bps < 0 || cache_bytes < 0 || dev.overhead_ns < 0 || dev.write_ns < 0)
		return usage("a model figure is out of range");
	dev.free_at = calloc(MAX_SERVERS, sizeof *dev.free_at); /* the model xattr may raise parallelism */
	if (!dev.free_at || cache_init((uint64_t)cache_bytes) != 0)
		return usage("not enough memory for the model");
	dev.rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	dev.fd = open(backing, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (dev.fd < 0) {
		perror(backing);
		return 1;
	}
	struct stat st;
	if (fstat(dev.fd, &st) != 0 || !S_ISREG(st.st_mode))
		return usage("the backing file is not a regular file");
	dev.size = (uint64_t)st.st_size;

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dev.due, &ca);

	char *fargv[] = {argv[0], "-o", "default_permissions,fsname=protolab-blockdev,subtype=protolab", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0) {
		fuse_session_destroy(se);
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, answerer, NULL);
	real_time();
	fprintf(stderr, "protolab-blockdev: serving %s (%llu bytes) at %s/%s\n", backing,
		(unsigned long long)dev.size, mnt, disk_name);
	int rc = fuse_session_loop(se);
	pthread_mutex_lock(&dev.lock);
	dev.stopping = 1;
	pthread_cond_signal(&dev.due);
	pthread_mutex_unlock(&dev.lock);
	pthread_join(t, NULL);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}
