// SPDX-License-Identifier: GPL-2.0-only
/*
 * loadlog.c - see loadlog.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "loadlog.h"

static struct loadlog_block *loadlog_block_get(struct loadlog *l)
{
	struct loadlog_block *b = l->spare;

	if (b) {
		l->spare = NULL;
	} else {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		l->nblocks++;
	}
	b->next = NULL;
	return b;
}

static void loadlog_block_put(struct loadlog *l, struct loadlog_block *b)
{
	if (!l->spare) {
		l->spare = b;
		return;
	}
	free(b);
	l->nblocks--;
}

int loadlog_push(struct loadlog *l, const struct loadlog_entry *e)
{
	struct loadlog_entry oldest;
	struct loadlog_block *b;

	if (l->n == LOADLOG_MAX_ENTRIES) {
		(void)loadlog_pop(l, &oldest);
		l->forgotten++;
	}
	if (!l->tail || l->tail_n == LOADLOG_BLOCK_ENTRIES) {
		b = loadlog_block_get(l);
		if (!b)
			return -ENOMEM;
		if (l->tail)
			l->tail->next = b;
		else
			l->head = b;
		l->tail = b;
		l->tail_n = 0;
	}
	l->tail->e[l->tail_n++] = *e;
	l->n++;
	return 0;
}

bool loadlog_pop(struct loadlog *l, struct loadlog_entry *e)
{
	struct loadlog_block *b = l->head;

	if (!l->n)
		return false;
	*e = b->e[l->head_pos++];
	l->n--;
	/* Read to its end, or the last entry: the block goes (then head == tail). */
	if (l->head_pos == LOADLOG_BLOCK_ENTRIES || !l->n) {
		l->head = b->next;
		if (!l->head)
			l->tail = NULL;
		l->head_pos = 0;
		loadlog_block_put(l, b);
	}
	return true;
}

void loadlog_free(struct loadlog *l)
{
	struct loadlog_block *b = l->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	free(l->spare);
	*l = (struct loadlog){ 0 };
}
