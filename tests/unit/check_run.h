/* SPDX-License-Identifier: GPL-2.0-only */
/* check_run.h - the end of every Check suite's main(). */
#ifndef ZSWAPD_CHECK_RUN_H
#define ZSWAPD_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

/* Runs sr's suites and frees it: EXIT_SUCCESS when none failed. */
static inline int check_run(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
