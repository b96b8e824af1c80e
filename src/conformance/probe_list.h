/*
 * probe_list.h — the conformance probes, in run order:
 *   PROBE(name, "rule", threads, needs, "what it checks")
 * One line per probe (tests/conformance/CMakeLists.txt, the suite's ctest
 * registration, reads this file to
 * register each probe with ctest once per strategy; `threads` = 1 — several
 * host threads or overlapping device work — labels it "concurrency").
 * `needs`: EAGER (runs on every platform) or CAPTURE (replays captured
 * graphs: N/A on a platform without capture). A probe that used to mix
 * both is split into an eager probe and a captured one, so a platform
 * without capture still runs the eager half.
 */
/* clang-format off */
/* Capture and replay (issue 5, conformance items 1-8, 12) */
PROBE(alternating_replays_hold_last_graph_values, "K12", 0, CAPTURE, "A B A B A A B over one output buffer")
PROBE(back_to_back_replays_without_host_sync, "K23", 0, CAPTURE, "AB, BA, AA, BB with no host sync between")
PROBE(eager_launches_after_replays, "K21", 0, CAPTURE, "eager launches after replays are correct")
PROBE(capture_while_another_graph_lives, "K12", 0, CAPTURE, "a second graph captured while the first lives")
PROBE(replay_enqueues_nothing_on_context_streams, "K20", 0, CAPTURE, "replays run inside the graph only")
PROBE(capture_isolation_control_and_kctx_never_trips_it, "K21", 0, CAPTURE, "isolation error is real; kctx avoids it")
PROBE(launch_on_uncaptured_stream_stays_out_of_graph, "K20", 0, CAPTURE, "caller-stream negative control")
PROBE(prepare_works_and_foreign_launch_refused_during_capture, "K16,K34", 1, CAPTURE, "prepare OK, launch CAPTURE_ACTIVE, capture kept")
PROBE(bucket_graphs_replay_in_random_order, "K12", 0, CAPTURE, "40 bucket graphs, seeded random replay order")
/* Cold capture: prepare inside an active capture, beside launches in flight (issue 13) */
PROBE(cold_capture_prepares_in_every_capture_mode, "K16,K14", 0, CAPTURE, "launch A, prepare B, launch B, prepare C (A's bytes), launch C in one capture; 3 modes; 20 replays")
PROBE(cold_capture_from_the_first_call, "K16", 0, CAPTURE, "begin capture, prepare A, launch A, end, replay")
PROBE(prepare_on_another_thread_keeps_global_capture, "K16", 1, CAPTURE, "another thread prepares during a global-mode capture: it survives")
PROBE(refused_prepares_inside_capture_keep_it_valid, "K16,K13,K14,K9", 0, CAPTURE, "invalid image, duplicate id, bad arguments inside a capture: still valid")
PROBE(prepare_beside_launches_in_flight, "K15,K16", 1, EAGER, "prepare beside a held launch; a held prepare delays no launch of another id")
PROBE(prepare_upload_timeout_poisons_and_close_waits, "K17", 0, EAGER, "a held upload times out: POISONED, kept, close BUSY until idle, then OK")
/* The launch guard, graph lifetimes, poison and quarantine (items 9-11) */
PROBE(unordered_replays_detected_as_concurrent_launch, "K23", 1, CAPTURE, "held overlap: refused, reported, no hang")
PROBE(two_copies_of_one_graph_detected_as_concurrent_launch, "K23", 1, CAPTURE, "two executable copies of one graph, held overlap: refused, reported, no hang")
PROBE(close_refused_while_graphs_live, "K25", 0, CAPTURE, "BUSY with the live-graph count, then OK")
PROBE(fatal_device_quarantines_until_owner_reset, "K29", 0, EAGER, "DEVICE_LOST, quarantine, owner reset closes")
PROBE(fatal_device_graphs_gone_after_owner_reset, "K36", 0, CAPTURE, "a graph of a lost device: quarantine, then gone")
PROBE(poisoned_context_refuses_launches, "K35", 0, EAGER, "a device error poisons: launch and prepare refused")
PROBE(poisoned_context_graphs_refuse_replays, "K35", 0, CAPTURE, "a device error stops earlier graphs")
PROBE(concurrent_launch_poison_stops_graphs_at_once, "K35", 1, CAPTURE, "graphs refuse once check reported")
PROBE(enqueue_failure_poisons_context, "K24", 0, EAGER, "a failed partial enqueue poisons, the chain drains")
PROBE(enqueue_failure_poison_stops_graphs, "K35", 0, CAPTURE, "a failed partial enqueue stops earlier graphs")
/* Resident resources (item 13) */
PROBE(launches_allocate_nothing_and_addresses_stay, "K11", 0, EAGER, "10,000 launches: no allocations")
PROBE(captured_graphs_share_the_five_events, "K12", 0, CAPTURE, "no per-graph events")
/* What a captured launch leaves in the framework's graph (issue 25, item 5) */
PROBE(captured_launches_use_the_framework_graph_pool, "K11,K19,K20", 0, CAPTURE, "outputs and workspaces from the framework's graph pool inside the capture, a freed block reused: no allocation, 8 replays correct")
PROBE(captured_launch_holds_nodes_from_both_private_streams, "K20,K21", 0, CAPTURE, "the graph holds AICPU- and AICore-stream nodes, none from the upload stream; replays correct")
/* Correctness of the work itself */
PROBE(vector_add_matches_host_reference, "K22", 0, EAGER, "eager launches, several sizes")
PROBE(vector_add_replays_match_host_reference, "K22", 0, CAPTURE, "replayed, several sizes")
PROBE(scale_add_chain_matches_host_reference, "K22", 0, EAGER, "eager launches, several sizes")
PROBE(scale_add_chain_replays_match_host_reference, "K22", 0, CAPTURE, "replayed, several sizes")
PROBE(blocked_matmul_matches_host_reference, "K22", 0, EAGER, "eager launches, several shapes")
PROBE(blocked_matmul_replays_match_host_reference, "K22", 0, CAPTURE, "replayed, several shapes")
/* Fault sweep of launch */
PROBE(launch_fault_sweep_eager, "K24", 0, EAGER, "fail each platform call of an eager launch")
PROBE(launch_fault_sweep_captured, "K24", 0, CAPTURE, "fail each platform call of a captured launch")
/* The lifecycle: no device lifecycle call, and fault sweeps of init, prepare and close */
PROBE(kernel_lifecycle_makes_no_lifecycle_calls, "K4", 0, EAGER, "counters proven, then a whole kernel lifecycle: zero lifecycle calls")
PROBE(init_fault_sweep, "K7", 0, EAGER, "fail each platform call of kernel init: rolled back, claim released")
PROBE(prepare_fault_sweep, "K17", 0, EAGER, "fail each platform call of prepare: nothing kept, or poisoned")
PROBE(close_fault_sweep, "K26", 0, EAGER, "fail each platform call of close: retry releases the rest")
/* Fault sweeps below the adapter (issue 34): a failing layer in front of the runtime fails each driver call */
PROBE(driver_fault_sweep_lifecycle, "K10,K11,K26,K27", 0, LAYER, "fail each driver call of init, prepare, launch and close: retried close finishes, each handle destroyed once, claim released")
PROBE(driver_fault_sweep_fatal, "K29,K30,K36", 0, LAYER, "fail each driver call with a fatal code: quarantined, no driver call until the owner's reset, then released")
PROBE(driver_fault_sweep_launch_eager, "K9,K24,K35", 0, LAYER, "fail each driver call of an eager launch: error, caller stream drains, next launch runs or is refused without a call")
PROBE(driver_fault_sweep_launch_captured, "K9,K24,K35", 0, LAYER_CAPTURE, "fail each driver call of a captured launch: error, capture ends, caller stream drains")
/* Upstream runtimes' kernel-mode scenarios (issue 34, item 2) */
PROBE(two_threads_one_context_device_failure, "K23,K34,K19,K35", 1, EAGER, "thread B launches while A is held (no host wait, runs after A), is CAPTURE_ACTIVE with 0 enqueues during A's capture, then fails on the device: B sees it, A's work as K35 says")
PROBE(stale_completion_report, "K23,K21", 1, EAGER, "round N held after its acquire step, round N+1 submitted: no stream completes early, both correct; 0 fills/copies/writes per launch")
PROBE(init_first_device_program_fails, "K11,K17", 0, EAGER, "init's first device work fails on the device: DEVICE_ERROR, rolled back, prepare/launch make no call, close OK, baseline")
/* Updatable captured launches (issue 36): kctx_launch_updatable, kctx_update_args */
PROBE(updated_scalar_replays_match_host_model, "K37,K39,K19", 0, CAPTURE, "a scalar updated 100 times between 101 replays on one stream, no host sync: every replay matches the host model")
PROBE(updated_tensor_moves_to_another_buffer_and_back, "K37,K18", 0, CAPTURE, "the output tensor moved to a second buffer and back: each replay writes only the buffer its set names")
PROBE(update_with_changed_signature_refused_without_enqueue, "K38,K9,K18", 0, CAPTURE, "a changed count or kind: INVALID_ARGUMENT, 0 enqueues, READY; the captured set still runs")
PROBE(update_of_destroyed_graph_refused, "K38,K25", 0, CAPTURE, "a destroyed graph's handle refused with 0 enqueues, also after its slot was reused")
PROBE(update_behind_held_replay_keeps_its_result, "K37,K40,K19", 1, CAPTURE, "an update enqueued behind a replay held on the device: that replay runs the old set, the next the new")
PROBE(updatable_launch_refused_when_eager, "K37,K9", 0, EAGER, "an eager kctx_launch_updatable: INVALID_STATE, 0 enqueues, READY")
PROBE(update_captured_into_another_graph, "K37", 0, CAPTURE, "an update captured into graph U: G runs the captured set until U runs, then U's set, at its place on the stream")
PROBE(update_of_poisoned_context_refused, "K38,K35", 0, CAPTURE, "a device error poisons the context: kctx_update_args POISONED with 0 enqueues")
PROBE(update_fault_sweep, "K40,K9", 0, CAPTURE, "fail each platform call of kctx_update_args: an error, READY, the previous set still runs")
/* clang-format on */
