// SPDX-License-Identifier: GPL-2.0-only
/*
 * hot.c - see hot.h.  Linear probing: pages are never deleted one by one
 * (that would break probe chains); expired ones are dropped wholesale when
 * the table is rebuilt.
 *
 * A rebuild is spread over the notes that follow, as Redis rehashes its
 * dicts.  hot_note() runs for every load, and a rebuild done at once (count
 * the live pages, size a new table for them, move them) would be a wait of
 * milliseconds for the fault that found the table full (docs/benchmarks.md,
 * "The hot set's rebuild").  Instead:
 *
 *  1. counting: each note reads HOT_STEP_SLOTS slots of the full table and
 *     counts the live pages in them (the table meanwhile fills a little
 *     further: at most cap / HOT_STEP_SLOTS notes, a sixty-fourth of it);
 *  2. moving: a new table is sized for what was counted, and each note
 *     moves slots of the old one into it, dropping the expired, enough of
 *     them that the move is over before the new table is half full.
 *     Lookups look in the new table, then the old.  The old one is only
 *     read, so its probe chains hold; a page in both (noted again while
 *     the move is under way) is the new table's, the later.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "hot.h"

/*
 * A table straight from mmap, not calloc: zero pages the kernel maps as
 * the slots are first written, spread over the notes.  calloc may take it
 * from the heap and clear it at once, a page fault per 4 KiB in one go:
 * 0.8 ms for the 1 MiB of a 64k-slot table, in a fault's wait.
 */
static struct hot_slot *hot_table_new(uint32_t cap)
{
	void *p = mmap(NULL, (size_t)cap * sizeof(struct hot_slot), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void hot_table_free(struct hot_slot *slot, uint32_t cap)
{
	if (slot)
		munmap(slot, (size_t)cap * sizeof(*slot));
}

static uint32_t hot_index(uint64_t pgno, uint32_t cap)
{
	/* Fibonacci hashing, top bits: neighbouring pages land far apart. */
	return (uint32_t)((pgno * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctz(cap)));
}

static bool hot_live(const struct hot_slot *s, uint64_t now_ms, uint64_t window_ms)
{
	return s->pgno && now_ms - s->when_ms < window_ms;
}

/* Three quarters full: linear probing slows down past that. */
static bool hot_full(const struct hot *h)
{
	return h->used >= h->cap / 4 * 3;
}

/* Where pgno is in slot[cap], or the empty slot where it would go; NULL if
 * every slot holds another page. */
static struct hot_slot *hot_find_in(struct hot_slot *slot, uint32_t cap, uint64_t pgno)
{
	uint32_t i = hot_index(pgno, cap);

	for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1))
		if (slot[i].pgno == pgno + 1 || !slot[i].pgno)
			return &slot[i];
	return NULL;
}

/* pgno's slot, in the table or in the one being moved into it; NULL if neither holds it. */
static const struct hot_slot *hot_lookup(const struct hot *h, uint64_t pgno)
{
	const struct hot_slot *s = h->cap ? hot_find_in(h->slot, h->cap, pgno) : NULL;

	if (s && s->pgno == pgno + 1)
		return s;
	s = h->old ? hot_find_in(h->old, h->old_cap, pgno) : NULL;
	return s && s->pgno == pgno + 1 ? s : NULL;
}

/* Puts a page into the table as s says it was seen; the later sighting wins.
 * At the cap, a full table forgets it, as it would a note. */
static void hot_put(struct hot *h, const struct hot_slot *from)
{
	struct hot_slot *s = hot_find_in(h->slot, h->cap, from->pgno - 1);

	if (!s || (!s->pgno && hot_full(h) && h->cap == HOT_MAX_SLOTS))
		return;
	if (!s->pgno) {
		*s = *from;
		h->used++;
	} else if (from->when_ms > s->when_ms) {
		s->when_ms = from->when_ms;
	}
}

/* Moves old slots [old_pos, end) into the table, the live ones only. */
static void hot_move(struct hot *h, uint32_t end, uint64_t now_ms, uint64_t window_ms)
{
	for (; h->old_pos < end; h->old_pos++) {
		const struct hot_slot *s = &h->old[h->old_pos];

		if (!s->pgno)
			continue;
		h->old_left--;
		if (hot_live(s, now_ms, window_ms))
			hot_put(h, s);
	}
	if (h->old_pos == h->old_cap) {
		hot_table_free(h->old, h->old_cap);
		h->old = NULL;
		h->old_cap = h->old_pos = h->old_left = 0;
	}
}

/* The count is done: a new table with room for as many again, the full one to be moved into it. */
static void hot_start_move(struct hot *h)
{
	uint32_t cap = HOT_MIN_SLOTS, room;
	struct hot_slot *slot;

	h->counting = false;
	while (cap < HOT_MAX_SLOTS && cap < (uint64_t)h->live * 4)
		cap *= 2;
	slot = hot_table_new(cap);
	if (!slot)
		return; /* keep what we have; the next note that finds it full counts again */
	h->old = h->slot;
	h->old_cap = h->cap;
	h->old_left = h->used;
	h->old_pos = 0;
	/*
	 * Over before half the room left is taken, each step adding one note
	 * at most.  Below the cap a quarter of the new table holds the live
	 * pages, so a step is 4 * old_cap / cap slots at most (a big table
	 * moved into a small one is mostly expired slots, read in order).  At
	 * the cap the live pages may fill it: the step is bounded, and the
	 * table forgets, as it does at the cap anyway.
	 */
	room = cap / 4 * 3 > h->live ? cap / 4 * 3 - h->live : 1;
	h->step = (uint32_t)((2ull * h->old_cap + room - 1) / room);
	if (h->step < HOT_STEP_SLOTS)
		h->step = HOT_STEP_SLOTS;
	if (cap == HOT_MAX_SLOTS && h->step > HOT_CAP_STEP_SLOTS)
		h->step = HOT_CAP_STEP_SLOTS;
	h->slot = slot;
	h->cap = cap;
	h->used = 0;
}

/* One note's share of a rebuild under way. */
static void hot_rebuild_step(struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	uint32_t end;

	if (h->counting) {
		end = h->count_pos + HOT_STEP_SLOTS < h->cap ? h->count_pos + HOT_STEP_SLOTS : h->cap;
		for (; h->count_pos < end; h->count_pos++)
			h->live += hot_live(&h->slot[h->count_pos], now_ms, window_ms);
		if (h->count_pos == h->cap)
			hot_start_move(h);
	} else if (h->old) {
		end = h->old_cap - h->old_pos > h->step ? h->old_pos + h->step : h->old_cap;
		hot_move(h, end, now_ms, window_ms);
	}
}

/*
 * A page that was not hot under the last count's window and is now: the
 * count plus these is the hot set until the next count (hot_count_recent()).
 * Pages that went cold since are not taken off, nor is the holder of a slot
 * taken over at the cap: the estimate errs on the side of hot, for at most
 * HOT_COUNT_EVERY_MS.
 */
static void hot_count_note(struct hot *h, const struct hot_slot *s, uint64_t pgno, uint64_t now_ms)
{
	if (!h->counted_ms)
		return;
	/* s is where hot_note() found pgno in the table: only a page not
	 * there may still be in the one being moved. */
	if ((!s || s->pgno != pgno + 1) && h->old)
		s = hot_find_in(h->old, h->old_cap, pgno);
	if (!s || s->pgno != pgno + 1 || now_ms - s->when_ms >= h->counted_window_ms)
		h->counted_fresh++;
}

void hot_note(struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms)
{
	struct hot_slot *s;

	if (!h->cap) {
		h->slot = hot_table_new(HOT_MIN_SLOTS);
		if (!h->slot)
			return;
		h->cap = HOT_MIN_SLOTS;
	}
	hot_rebuild_step(h, now_ms, window_ms);
	/* Below the cap the new table is sized not to fill before the move
	 * ends; should the window grow meanwhile, the move ends now. */
	if (hot_full(h) && h->old && h->cap < HOT_MAX_SLOTS)
		hot_move(h, h->old_cap, now_ms, window_ms);
	/* Three quarters full: drop the expired, grow if that is not enough.
	 * At the cap, not on every note: only once pages had time to expire. */
	if (hot_full(h) && !h->counting && !h->old &&
	    (h->cap < HOT_MAX_SLOTS || now_ms - h->rebuilt_ms >= window_ms / 4)) {
		h->counting = true;
		h->count_pos = 0;
		h->live = 0;
		h->rebuilt_ms = now_ms;
	}
	s = hot_find_in(h->slot, h->cap, pgno);
	hot_count_note(h, s, pgno, now_ms);
	if (!s || (!s->pgno && hot_full(h) && !h->counting)) {
		/* At the cap: take over the page's home slot, forgetting its holder. */
		s = &h->slot[hot_index(pgno, h->cap)];
	} else if (!s->pgno) {
		h->used++;
		/* Live, and behind the count: count it (ahead, the count finds it). */
		if (h->counting && (uint32_t)(s - h->slot) < h->count_pos)
			h->live++;
	}
	s->pgno = pgno + 1;
	s->when_ms = now_ms;
}

bool hot_recent(const struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms)
{
	const struct hot_slot *s = hot_lookup(h, pgno);

	return s && now_ms - s->when_ms < window_ms;
}

bool hot_when(const struct hot *h, uint64_t pgno, uint64_t *when_ms)
{
	const struct hot_slot *s = hot_lookup(h, pgno);

	if (!s)
		return false;
	*when_ms = s->when_ms;
	return true;
}

uint64_t hot_count(const struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < h->cap; i++)
		n += hot_live(&h->slot[i], now_ms, window_ms);
	/* Not moved yet, and not noted again since (then the table has it). */
	for (uint32_t i = h->old_pos; h->old && i < h->old_cap; i++) {
		const struct hot_slot *s = &h->old[i], *t;

		if (!hot_live(s, now_ms, window_ms))
			continue;
		t = hot_find_in(h->slot, h->cap, s->pgno - 1);
		n += !t || t->pgno != s->pgno;
	}
	return n;
}

/*
 * hot_count() walks the whole table: 1 MiB at 64k slots (about 100 us),
 * 16 MiB at the cap (milliseconds), in the loop, where faults wait.  A
 * group over its budget asks for each member's ten times a second, so the
 * walk is done once a second, and in between the pages that became hot
 * since are added (hot_count_note()).  Without them, a hot set that grew
 * within the second would be taken for cold and given up
 * (docs/benchmarks.md, "Counting the hot set").
 */
uint64_t hot_count_recent(struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	if (!h->counted_ms || now_ms + 1 - h->counted_ms >= HOT_COUNT_EVERY_MS ||
	    window_ms != h->counted_window_ms) {
		h->counted = hot_count(h, now_ms, window_ms);
		h->counted_ms = now_ms + 1;
		h->counted_window_ms = window_ms;
		h->counted_fresh = 0;
	}
	return h->counted + h->counted_fresh;
}

uint64_t hot_size(const struct hot *h)
{
	return (uint64_t)h->used + h->old_left;
}

void hot_free(struct hot *h)
{
	hot_table_free(h->slot, h->cap);
	hot_table_free(h->old, h->old_cap);
	*h = (struct hot){ 0 };
}
