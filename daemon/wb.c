// SPDX-License-Identifier: GPL-2.0-only
/*
 * wb.c - the writeback tier: the pool's least recently stored entries move
 * to a swap file, zswap's "writeback", through io_uring.
 *
 * Layout.  The file is an array of 4 KiB blocks.  Compressed objects are
 * packed first-fit into blocks and never straddle one, so a load reads at
 * most one block (only the sectors of its object: O_DIRECT allows reads in
 * the device's logical block) while a writeback writes about len bytes per
 * page instead of 4096: whole pages would cost 4096 bytes each way (what
 * kernel zswap writes after decompressing).  A block is free again when its last
 * object goes (swapmap.c keeps the count); there is no compaction of
 * half-empty blocks (swap_used_bytes counts whole blocks, so the waste shows).
 *
 * I/O.  The file is opened O_DIRECT, so written blocks do not also sit in
 * the page cache (otherwise writeback would free nothing), with aligned
 * buffers.  Every read and write is an io_uring request whose completion
 * arrives through an eventfd in the main loop: the loop never waits on the
 * disk, and a fault waiting for a block does not hold up faults on pages in
 * the pool.  A slot is only ever read after this run wrote it: stale
 * contents of a reused file are never served.
 *
 * Entries.  IN_POOL -> WRITING (the data stays in the pool, loads use it)
 * -> ON_DISK (the pool object is released).  A write that fails puts the
 * entries back in the pool, counts writeback_errors, logs once per streak
 * and backs off: nothing is lost, the pool just stays full a while.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <liburing.h>

#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "pool.h"
#include "swapmap.h"
#include "uffd.h"
#include "persist/journal.h"

#define WB_BLOCK SWAPMAP_BLOCK
#define WB_QUEUE_DEPTH 64
#define WB_WRITE_BLOCKS 16		 /* blocks packed per writeback round */
#define WB_BACKOFF_USEC (5 * 1000000ull) /* after an error, before trying again */
#define WB_HOLD_USEC (10 * 1000000ull)	 /* a dead zswapd's blocks, after the take-over */

enum wb_op { WB_WRITE, WB_READ, WB_READAHEAD };

struct wb_io {
	enum wb_op op;
	uint8_t *buf;
	uint64_t block;
	unsigned off, len; /* the bytes of the block read or written (a fault reads only its object) */
	/* write: the entries packed into this block */
	struct entry *entries[SWAPMAP_MAX_PER_BLOCK];
	unsigned nentries;
	/* read: who waits, at which page (readahead: nobody; entry only) */
	struct target *target;
	uint64_t addr;
	struct entry *entry;
	struct wb_io *next_read; /* on target->swapin.reads, so a dying target can let go */
};

struct wb {
	int fd;
	struct swapmap *map; /* the same as the daemon's d->swapmap */
	struct io_uring ring;
	struct watch w;	   /* the ring's eventfd */
	unsigned inflight;
	uint64_t backoff_until;
	bool error_streak;
	unsigned read_align; /* O_DIRECT offset alignment: a fault reads these units of a block */
	/* Blocks the zswapd before us may still be writing (wb_hold()). */
	uint64_t *held;
	size_t nheld;
	uint64_t held_until;
};

static struct wb_io *wb_io_new(enum wb_op op)
{
	struct wb_io *io = calloc(1, sizeof(*io));

	if (!io)
		return NULL;
	if (posix_memalign((void **)&io->buf, WB_BLOCK, WB_BLOCK)) {
		free(io);
		return NULL;
	}
	io->op = op;
	io->len = WB_BLOCK;
	return io;
}

static void wb_io_free(struct wb_io *io)
{
	free(io->buf);
	free(io);
}

static int wb_submit(struct wb *wb, struct wb_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wb->ring);
	int r;

	if (!sqe)
		return -EBUSY;
	if (io->op == WB_WRITE)
		io_uring_prep_write(sqe, wb->fd, io->buf, io->len, io->block * WB_BLOCK + io->off);
	else
		io_uring_prep_read(sqe, wb->fd, io->buf, io->len, io->block * WB_BLOCK + io->off);
	io_uring_sqe_set_data(sqe, io);
	r = io_uring_submit(&wb->ring);
	if (r < 0)
		return r;
	wb->inflight++;
	return 0;
}

/* Packs the oldest entries of that list into one block and writes it. */
static int wb_write_one(struct daemon *d)
{
	struct wb *wb = d->wb;
	struct wb_io *io;
	unsigned off = 0;
	int r;

	io = wb_io_new(WB_WRITE);
	if (!io)
		return -ENOMEM;
	r = swapmap_alloc(wb->map, &io->block);
	if (r < 0)
		goto fail;
	for (struct entry *e = entry_lru_next(d)->head, *next;
	     e && io->nentries < SWAPMAP_MAX_PER_BLOCK; e = next) {
		next = e->lru_next;
		if (off + e->len > WB_BLOCK)
			break;
		memcpy(io->buf + off, pool_map(d->pool, e->val), e->len);
		entry_lru_del(d, e);
		e->readahead = 0; /* read ahead and never used: written back again */
		entry_get(e); /* the write holds it until it completes */
		e->where = ENTRY_WRITING;
		e->disk = io->block * WB_BLOCK + off;
		io->entries[io->nentries++] = e;
		swapmap_get(wb->map, io->block);
		off += e->len;
	}
	if (io->nentries == 0) {
		swapmap_unalloc(wb->map, io->block);
		r = 0;
		goto fail;
	}
	memset(io->buf + off, 0, WB_BLOCK - off);
	swapmap_set_writing(wb->map, io->block, true);
	journal_swap_write(d, io->block, false);
	r = wb_submit(wb, io);
	if (r < 0) {
		/* Not even submitted: everything goes back as it was. */
		journal_swap_write(d, io->block, true);
		swapmap_set_writing(wb->map, io->block, false);
		for (unsigned i = io->nentries; i-- > 0;) {
			struct entry *e = io->entries[i];

			e->where = ENTRY_IN_POOL;
			swapmap_put(wb->map, io->block);
			entry_lru_add(d, e, true);
			entry_put(d, e);
		}
		goto fail;
	}
	return 1;
fail:
	wb_io_free(io);
	return r;
}

static bool wb_pool_over_threshold(struct daemon *d)
{
	return d->pool_limit.bytes &&
	       entry_pool_size(d) * 100 > d->pool_limit.bytes * d->cfg.pool.accept_threshold_percent;
}

/*
 * A zswapd killed with writes in flight leaves them to the kernel, which
 * completes them as it tears its io_uring down, after it is gone: one could
 * land on a block we took over as free and wrote since.  So the blocks the
 * journal names as being written when it died are held, not free, until
 * WB_HOLD_USEC after the take-over; no write stays in flight that long.
 */
void wb_hold(struct daemon *d, const uint64_t *blocks, size_t n)
{
	struct wb *wb = d->wb;

	if (!wb || !n)
		return;
	wb->held = calloc(n, sizeof(*wb->held));
	if (!wb->held) /* without the list, held for good: still never reused */
		log_warning("holding %zu swap file blocks for good: out of memory", n);
	for (size_t i = 0; i < n; i++) {
		if (blocks[i] >= swapmap_nblocks(wb->map))
			continue;
		swapmap_set_writing(wb->map, blocks[i], true);
		if (wb->held)
			wb->held[wb->nheld++] = blocks[i];
	}
	wb->held_until = now_usec() + WB_HOLD_USEC;
	log_info("holding %zu swap file blocks the zswapd before was writing, for %llu s", n,
		 (unsigned long long)(WB_HOLD_USEC / 1000000));
}

static void wb_release_held(struct daemon *d)
{
	struct wb *wb = d->wb;

	for (size_t i = 0; i < wb->nheld; i++) {
		journal_swap_write(d, wb->held[i], true);
		swapmap_set_writing(wb->map, wb->held[i], false);
	}
	free(wb->held);
	wb->held = NULL;
	wb->nheld = 0;
}

/*
 * Called every loop turn: while the pool is over accept_threshold_percent of
 * its limit, keep up to WB_WRITE_BLOCKS blocks of writeback in flight.
 */
void wb_turn(struct daemon *d)
{
	struct wb *wb = d->wb;
	int r;

	if (wb && wb->nheld && now_usec() >= wb->held_until)
		wb_release_held(d);
	if (!wb || d->stop.active || now_usec() < wb->backoff_until)
		return;
	while (wb->inflight < WB_WRITE_BLOCKS && entry_lru_next(d)->head && wb_pool_over_threshold(d)) {
		r = wb_write_one(d);
		if (r == 0)
			break;
		if (r < 0) {
			if (r == -ENOSPC && !wb->error_streak)
				log_warning("swap file full (%llu blocks): pool entries stay in memory",
					    (unsigned long long)swapmap_nblocks(wb->map));
			else if (!wb->error_streak)
				log_warning_errno(r, "writeback failed: %m; retrying in 5 s");
			wb->error_streak = true;
			d->st.writeback_errors++;
			wb->backoff_until = now_usec() + WB_BACKOFF_USEC;
			break;
		}
	}
}

static void wb_write_done(struct daemon *d, struct wb_io *io, int res)
{
	struct wb *wb = d->wb;
	bool ok = res == (int)WB_BLOCK;

	journal_swap_write(d, io->block, true);
	swapmap_set_writing(wb->map, io->block, false);
	if (!ok) {
		d->st.writeback_errors++;
		if (!wb->error_streak)
			log_warning_errno(res < 0 ? res : -EIO,
					  "writeback to the swap file failed: %m; entries stay in the pool, "
					  "retrying in 5 s");
		wb->error_streak = true;
		wb->backoff_until = now_usec() + WB_BACKOFF_USEC;
	} else {
		wb->error_streak = false;
		d->st.swap_writes++;
		d->st.swap_write_bytes += WB_BLOCK;
	}
	for (unsigned i = io->nentries; i-- > 0;) {
		struct entry *e = io->entries[i];

		if (e->refs > 1 && e->where == ENTRY_WRITING) {
			if (ok) {
				/* On disk now: the pool copy goes, once the
				 * journal says where the page is. */
				uint64_t handle = e->val;

				e->val = 0;
				e->where = ENTRY_ON_DISK;
				journal_entry(d, e);
				pool_release(d->pool, handle);
				d->st.compressed_bytes -= e->len;
				d->st.written_back_pages++;
			} else {
				swapmap_put(wb->map, io->block);
				e->where = ENTRY_IN_POOL;
				entry_lru_add(d, e, true);
			}
		}
		entry_put(d, e);
	}
	wb_io_free(io);
}

/*
 * Starts the read a fault on an on-disk entry needs.  The fault is answered
 * in wb_read_done(); until then the faulting thread waits, and nothing else.
 */
int wb_read(struct target *t, uint64_t addr, struct entry *e)
{
	struct wb *wb = t->d->wb;
	unsigned at = (unsigned)(e->disk % WB_BLOCK), unit;
	struct wb_io *io;
	int r;

	if (!wb)
		return -EIO;
	unit = wb->read_align;
	if (e->reads == UINT8_MAX)
		return -EBUSY; /* retried: the reads under way will map it */
	io = wb_io_new(WB_READ);
	if (!io)
		return -ENOMEM;
	/* Only the sectors the object lies in: a compressed page is a few
	 * hundred bytes of its block, and O_DIRECT reads as little as the
	 * device's logical block (512 bytes here) when aligned to it. */
	io->block = e->disk / WB_BLOCK;
	io->off = at / unit * unit;
	io->len = (at + e->len + unit - 1) / unit * unit - io->off;
	io->target = t;
	io->addr = addr;
	io->entry = e;
	entry_get(e);
	r = wb_submit(wb, io);
	if (r < 0) {
		entry_put(t->d, e);
		wb_io_free(io);
		return r;
	}
	e->reads++;
	io->next_read = t->swapin.reads;
	t->swapin.reads = io;
	return 0;
}

/* The target is going away: its reads complete into nothing. */
void wb_forget_target(struct target *t)
{
	for (struct wb_io *io = t->swapin.reads; io; io = io->next_read)
		io->target = NULL;
	t->swapin.reads = NULL;
}

static void wb_unlink_read(struct target *t, struct wb_io *io)
{
	for (struct wb_io **pp = &t->swapin.reads; *pp; pp = &(*pp)->next_read) {
		if (*pp == io) {
			*pp = io->next_read;
			return;
		}
	}
}

static void wb_read_done(struct daemon *d, struct wb_io *io, int res)
{
	struct target *t = io->target;
	struct entry *e = io->entry;
	uint64_t addr = io->addr;
	int r;

	e->reads--;
	if (!t)
		goto out;
	wb_unlink_read(t, io);
	if (idx_lookup(t->idx, addr >> ZS_PAGE_SHIFT) != e) {
		/* Served meanwhile (a woken thread faulted again and read it
		 * too), discarded or moved: what we read is no longer the page
		 * there, and mapping it would put older contents over a page
		 * evicted since.  Whoever still waits faults again. */
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		goto out;
	}
	r = res == (int)io->len
		    ? entry_unpack(d, e, io->buf + e->disk % WB_BLOCK - io->off, d->buf.page)
		    : -EIO;
	if (r < 0) {
		/* The data is gone.  Poisoning makes the access SIGBUS, as a
		 * hardware memory error would; never map garbage or zeros. */
		d->st.swap_read_errors++;
		log_error_errno(res < 0 ? res : r,
				"pid %d: cannot read back page %#llx from the swap file: %m",
				(int)t->pid, (unsigned long long)addr);
		target_unmark(t, addr); /* a marker refuses the poison */
		if (uffd_poison(t->uffd_w.fd, addr) < 0) {
			target_kill(t, "swap read failed");
		} else {
			/* The access now gets SIGBUS, and no fault: the entry is
			 * of no use, and read again it would poison twice
			 * (EEXIST), which kills the target. */
			journal_unlink(t, addr);
			idx_erase(t->idx, addr >> ZS_PAGE_SHIFT);
			t->counts.compressed_bytes -= e->len;
			entry_put(d, e);
		}
		goto out;
	}
	d->st.swap_reads++;
	d->st.swap_read_bytes += io->len;
	r = target_fill_checked(t, addr, uffd_copy(t->uffd_w.fd, addr, d->buf.page, true));
	if (r == 0 || r == -EEXIST) {
		target_page_loaded(t, addr, e);
		t->limit.faults_since_check++;
	}
	if (r != 0)
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE); /* it faults again and we try again */
out:
	entry_put(d, e);
	wb_io_free(io);
}

/*
 * Readahead: faults on written-back pages of one process at consecutive
 * addresses look sequential, so the next pages are read back into the pool
 * (their compressed bytes, no decompression) before they are asked for.
 * A fault that then finds one in the pool counts a readahead hit.
 */
static void wb_readahead_one(struct daemon *d, struct entry *e)
{
	struct wb_io *io = wb_io_new(WB_READAHEAD);

	if (!io)
		return;
	io->block = e->disk / WB_BLOCK;
	io->entry = e;
	entry_get(e);
	e->ra_pending = 1;
	if (wb_submit(d->wb, io) < 0) {
		e->ra_pending = 0;
		entry_put(d, e);
		wb_io_free(io);
	}
}

bool wb_read_room(const struct daemon *d)
{
	return d->wb && d->wb->inflight < WB_QUEUE_DEPTH - WB_WRITE_BLOCKS;
}

void wb_readahead(struct target *t, uint64_t addr)
{
	struct daemon *d = t->d;
	bool sequential = t->swapin.last_addr + ZS_PAGE_SIZE == addr;

	t->swapin.last_addr = addr;
	if (!d->wb || !sequential)
		return;
	for (unsigned i = 1; i <= d->cfg.swap.readahead_pages; i++) {
		struct entry *e = idx_lookup(t->idx, (addr >> ZS_PAGE_SHIFT) + i);

		if (!wb_read_room(d))
			break;
		if (e && e->where == ENTRY_ON_DISK && !e->ra_pending && !e->reads)
			wb_readahead_one(d, e);
	}
}

static void wb_readahead_done(struct daemon *d, struct wb_io *io, int res)
{
	struct entry *e = io->entry;
	uint64_t handle;

	e->ra_pending = 0;
	/*
	 * Still wanted by someone besides us, still on disk, not being read by
	 * a fault (which decodes its block at e->disk when it completes: the
	 * entry must still be there then, not back in the pool, its block
	 * given up, perhaps written back elsewhere), and room in the pool?
	 */
	if (res == (int)WB_BLOCK && e->refs > 1 && e->where == ENTRY_ON_DISK && !e->reads &&
	    entry_pool_size(d) + e->len <= d->pool_limit.bytes &&
	    pool_alloc(d->pool, e->len, &handle) == 0) {
		memcpy(pool_map(d->pool, handle), io->buf + e->disk % WB_BLOCK, e->len);
		e->val = handle;
		e->where = ENTRY_IN_POOL;
		journal_entry(d, e); /* before its block may be written over */
		swapmap_put(d->swapmap, e->disk / WB_BLOCK);
		e->readahead = 1;
		d->st.compressed_bytes += e->len;
		d->st.readahead_pages++;
		d->st.swap_reads++;
		d->st.swap_read_bytes += WB_BLOCK;
		entry_lru_add(d, e, false);
	}
	entry_put(d, e);
	wb_io_free(io);
}

static void wb_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct wb *wb = d->wb;
	struct io_uring_cqe *cqe;
	uint64_t n;

	(void)w;
	(void)events;
	(void)!read(wb->w.fd, &n, sizeof(n));
	while (io_uring_peek_cqe(&wb->ring, &cqe) == 0) {
		struct wb_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&wb->ring, cqe);
		wb->inflight--;
		if (io->op == WB_WRITE)
			wb_write_done(d, io, res);
		else if (io->op == WB_READAHEAD)
			wb_readahead_done(d, io, res);
		else
			wb_read_done(d, io, res);
	}
}

/* For the stop path: a blocking read of one on-disk entry into page. */
int wb_load_sync(struct daemon *d, const struct entry *e, void *page)
{
	uint8_t *buf;
	int r;

	if (posix_memalign((void **)&buf, WB_BLOCK, WB_BLOCK))
		return -ENOMEM;
	r = pread(d->wb->fd, buf, WB_BLOCK, (off_t)(e->disk / WB_BLOCK * WB_BLOCK)) == WB_BLOCK
		    ? entry_unpack(d, e, buf + e->disk % WB_BLOCK, page)
		    : -EIO;
	free(buf);
	return r;
}

/*
 * The unit O_DIRECT reads this file in: statx's DIOALIGN (Linux 6.1+),
 * else a whole block.  Buffers are block-aligned, which satisfies any
 * memory alignment up to a block.
 */
static unsigned wb_read_align(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0 ||
	    !(stx.stx_mask & STATX_DIOALIGN))
		return WB_BLOCK;
	if (!stx.stx_dio_offset_align || stx.stx_dio_offset_align > WB_BLOCK ||
	    WB_BLOCK % stx.stx_dio_offset_align || stx.stx_dio_mem_align > WB_BLOCK)
		return WB_BLOCK;
	return stx.stx_dio_offset_align;
}

/* Made anew (O_EXCL), or an existing one never through a symlink. */
static int wb_open_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int wb_open(struct daemon *d)
{
	const char *path = d->cfg.swap.swap_file;
	uint64_t nblocks;
	struct wb *wb;
	struct stat st;
	int r;

	if (!path[0] || !d->cfg.swap.swap_file_size)
		return 0;
	wb = calloc(1, sizeof(*wb));
	if (!wb)
		return -ENOMEM;
	/* An upgrade hands its descriptor on: the file holds pages (handover_load.c). */
	wb->fd = d->upgrade.kept_swap_fd >= 0 ? d->upgrade.kept_swap_fd : wb_open_file(path);
	d->upgrade.kept_swap_fd = -1;
	if (wb->fd < 0) {
		r = log_error_errno(wb->fd, "Failed to open swap file %s: %m", path);
		goto fail_free;
	}
	/*
	 * Ours, and ours alone: a file someone else made there (another
	 * user's, or a second name of a file of root's, a hard link) would be
	 * overwritten with other processes' memory.
	 */
	if (fstat(wb->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		r = log_error_errno(-EPERM, "Swap file %s is not a regular file of uid %u with "
					    "one name; refusing it", path, (unsigned)geteuid());
		goto fail_close;
	}
	fchmod(wb->fd, 0600);
	wb->read_align = wb_read_align(wb->fd);
	nblocks = d->cfg.swap.swap_file_size / WB_BLOCK;
	r = fallocate(wb->fd, 0, 0, (off_t)(nblocks * WB_BLOCK));
	if (r < 0) {
		/* A sparse file still works until the disk fills; writes then fail
		 * with ENOSPC, are counted, and the entries stay in the pool. */
		log_warning_errno(-errno, "Cannot preallocate %s: %m; continuing with a sparse file",
				  path);
		if (ftruncate(wb->fd, (off_t)(nblocks * WB_BLOCK)) < 0) {
			r = log_error_errno(-errno, "Failed to size swap file %s: %m", path);
			goto fail_close;
		}
	}
	r = swapmap_new(nblocks, &wb->map);
	if (r < 0)
		goto fail_close;
	r = io_uring_queue_init(WB_QUEUE_DEPTH, &wb->ring, 0);
	if (r < 0) {
		log_error_errno(r, "Failed to set up io_uring: %m");
		goto fail_arrays;
	}
	wb->w.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	wb->w.fn = wb_ready;
	if (wb->w.fd < 0 || io_uring_register_eventfd(&wb->ring, wb->w.fd) < 0 ||
	    watch_add(d->epfd, &wb->w, EPOLLIN) < 0) {
		r = log_error_errno(-errno, "Failed to watch io_uring completions: %m");
		goto fail_ring;
	}
	d->wb = wb;
	d->swapmap = wb->map;
	log_info("writeback tier: %s, %llu MiB, faults read %u-byte units", path,
		 (unsigned long long)(nblocks * WB_BLOCK >> 20), wb->read_align);
	return 0;
fail_ring:
	if (wb->w.fd >= 0)
		close(wb->w.fd);
	io_uring_queue_exit(&wb->ring);
fail_arrays:
	swapmap_free(wb->map);
fail_close:
	close(wb->fd);
fail_free:
	free(wb);
	return r;
}

void wb_close(struct daemon *d)
{
	struct wb *wb = d->wb;

	if (!wb)
		return;
	watch_del(d->epfd, &wb->w);
	close(wb->w.fd);
	io_uring_queue_exit(&wb->ring);
	close(wb->fd);
	swapmap_free(wb->map);
	free(wb->held);
	free(wb);
	d->wb = NULL;
	d->swapmap = NULL;
}

int wb_fd(const struct daemon *d)
{
	return d->wb ? d->wb->fd : -1;
}

/* Writes in flight, ours or (held blocks) maybe the zswapd's before us. */
bool wb_busy(const struct daemon *d)
{
	return d->wb && (d->wb->inflight || d->wb->nheld);
}
