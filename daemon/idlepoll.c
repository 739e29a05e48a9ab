// SPDX-License-Identifier: GPL-2.0-only
/* idlepoll.c - whether idle CPUs should poll while faults come (idlepoll.h). */

#include "idlepoll.h"

bool idlepoll_fault(struct idlepoll *p, uint64_t now, uint64_t hold_usec)
{
	uint64_t slot = now / IDLEPOLL_SLOT_USEC;
	bool take;

	if (slot != p->slot) {
		p->slot = slot;
		p->slot_faults = 0;
	}
	if (++p->slot_faults < IDLEPOLL_BURST_FAULTS || !hold_usec)
		return false;
	take = !p->held;
	if (take)
		p->since_usec = now;
	p->held = true;
	p->until_usec = now + hold_usec;
	return take;
}

bool idlepoll_expired(struct idlepoll *p, uint64_t now)
{
	if (!p->held || now < p->until_usec)
		return false;
	p->held = false;
	return true;
}

uint64_t idlepoll_timeout(const struct idlepoll *p, uint64_t now)
{
	if (!p->held)
		return UINT64_MAX;
	return now < p->until_usec ? p->until_usec - now : 0;
}
