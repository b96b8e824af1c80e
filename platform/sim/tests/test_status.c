/*
 * Statuses: names and messages come from the one status list; unknown
 * values have a name and a message too; the last-error message is per
 * thread; operation names exist for every counted operation.
 */
#include "harness.h"

#include <string.h>

TEST(status_names_and_messages_come_from_the_status_list) {
#define STATUS_ROW_(name, num, msg)                                \
    CHECK_EQ((int)SIM_##name, num);                                \
    CHECK(strcmp(sim_status_name(SIM_##name), "SIM_" #name) == 0); \
    CHECK(strcmp(sim_status_string(SIM_##name), msg) == 0);
    SIM_STATUS_MAP(STATUS_ROW_)
#undef STATUS_ROW_
}

TEST(status_codes_carry_their_cuda_numbers) {
    CHECK_EQ(SIM_OK, 0);
    CHECK_EQ(SIM_CAPTURE_UNSUPPORTED, 900);
    CHECK_EQ(SIM_CAPTURE_INVALIDATED, 901);
    CHECK_EQ(SIM_CAPTURE_MERGE, 902);
    CHECK_EQ(SIM_CAPTURE_UNMATCHED, 903);
    CHECK_EQ(SIM_CAPTURE_UNJOINED, 904);
    CHECK_EQ(SIM_CAPTURE_ISOLATION, 905);
    CHECK_EQ(SIM_CAPTURED_EVENT, 907);
    CHECK_EQ(SIM_CAPTURE_WRONG_THREAD, 908);
    CHECK_EQ(SIM_ERR_INVALID_VALUE, SIM_INVALID_VALUE);
    CHECK_EQ(SIM_ERR_INVALID_HANDLE, SIM_INVALID_HANDLE);
}

TEST(unknown_status_values_are_named_unknown) {
    const int unknown[] = {-1, 17, 99, 899, 906, 909, 1000, 107024, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        sim_status s = (sim_status)unknown[i];
        CHECK(strcmp(sim_status_name(s), "SIM_UNKNOWN") == 0);
        const char *msg = sim_status_string(s);
        CHECK(msg != NULL);
    }
}

TEST(every_status_has_a_distinct_name) {
    const sim_status all[] = {
#define LIST_(name, num, msg) SIM_##name,
        SIM_STATUS_MAP(LIST_)
#undef LIST_
    };
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(strcmp(sim_status_name(all[i]), sim_status_name(all[j])) != 0);
}

TEST(last_error_message_describes_the_last_failure) {
    CHECK(sim_last_error_message() != NULL);
    CHECK_SIM(sim_stream_destroy(0), SIM_INVALID_HANDLE);
    const char *msg = sim_last_error_message();
    CHECK(msg != NULL);
    CHECK(msg[0] != '\0');
}

typedef struct other_thread_message {
    sim_status status;
    char message[512];
} other_thread_message;

static void *fail_with_invalid_value(void *arg) {
    other_thread_message *m = arg;
    m->status = sim_device_count(NULL);
    strncpy(m->message, sim_last_error_message(), sizeof m->message - 1);
    return NULL;
}

TEST(last_error_message_is_per_thread) {
    CHECK_SIM(sim_event_destroy(0), SIM_INVALID_HANDLE);
    char mine[512] = {0};
    strncpy(mine, sim_last_error_message(), sizeof mine - 1);
    CHECK(mine[0] != '\0');

    other_thread_message other = {SIM_OK, {0}};
    harness_run_in_thread(fail_with_invalid_value, &other);
    CHECK_SIM(other.status, SIM_INVALID_VALUE);
    CHECK(other.message[0] != '\0');
    /* The other thread's failure did not replace this thread's message. */
    CHECK(strcmp(sim_last_error_message(), mine) == 0);
    CHECK(strcmp(other.message, mine) != 0);
}

TEST(every_counted_operation_has_a_distinct_name) {
    for (int op = 0; op < SIM_OP_COUNT_; op++) {
        const char *name = sim_op_name((sim_op)op);
        if (!CHECK(name != NULL && name[0] != '\0')) continue;
        for (int other = 0; other < op; other++) {
            const char *o = sim_op_name((sim_op)other);
            CHECK(o == NULL || strcmp(name, o) != 0);
        }
    }
}
