/* Collective agreement on failures (issue 11, issue 16): every rank learns the status and the
 * message of the rank that found a failure, also through a second (nested) agreement, so the
 * rank that reports it prints what was found rather than its own empty message; failures met by
 * one rank alone are not marked as agreed. */
#include <stdio.h>
#include <string.h>

#include "par/par.h"
#include "test_util.h"

#define P gf_test_par

static void test_message_of_the_finder(void **state) {
    (void)state;
    gf_error_clear();
    int finder = P.size - 1;
    gf_status local = GF_OK;
    if (P.rank == finder)
        local = GF_ERROR(GF_ERR_INPUT, "particle %d has material 7, the configuration defines 2",
                         finder);
    else
        assert_false(gf_error_agreed());
    int first = -1;
    gf_status st = gf_par_agree(&P, local, &first);
    assert_int_equal(st, GF_ERR_INPUT);
    assert_int_equal(first, finder);
    assert_true(gf_error_agreed());
    assert_int_equal(gf_error_origin(), finder);
    char want[128];
    snprintf(want, sizeof want, "particle %d has material 7", finder);
    assert_non_null(strstr(gf_error_message(), want));

    /* Every rank now fails; a second agreement (the caller's) is led by rank 0, which must pass
     * on the finder's message and rank, not its own. */
    st = gf_par_agree(&P, st, &first);
    assert_int_equal(st, GF_ERR_INPUT);
    assert_int_equal(first, 0);
    assert_int_equal(gf_error_origin(), finder);
    assert_non_null(strstr(gf_error_message(), want));
    gf_error_clear();
}

static void test_success_and_local_failures(void **state) {
    (void)state;
    gf_error_clear();
    int first = -1;
    assert_int_equal(gf_par_agree(&P, GF_OK, &first), GF_OK);
    assert_int_equal(first, P.size);
    /* A failure recorded on one rank is that rank's alone until agreed. */
    gf_status st = GF_ERROR(GF_ERR_NUMERIC, "a non-finite block");
    assert_int_equal(st, GF_ERR_NUMERIC);
    assert_false(gf_error_agreed());
    /* Marked as met alike everywhere (a check of reduced values), it is agreed. */
    assert_int_equal(gf_error_everywhere(st), GF_ERR_NUMERIC);
    assert_true(gf_error_agreed());
    gf_error_clear();
    assert_false(gf_error_agreed());
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_message_of_the_finder),
    cmocka_unit_test(test_success_and_local_failures),
};

GF_TEST_MPI_MAIN(tests)
