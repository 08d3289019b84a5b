#!/usr/bin/env bash
# t_repl_netcut.sh with the leader's peer connections black-holed instead of
# reset (tcp_proxy.py `hole`): peers see silence and must time out; the cut
# leader is made the active controller as well (REPL_NETCUT_CONTROLLER=1).
# Pending (not run by make test, which only runs test/integration/t_*.sh):
# when the cut-off leader is also the active controller, a heartbeat each
# broker has in flight to it is never answered and never times out
# (broker_lifecycle.c waits while l->inflight), so no broker heartbeats the
# new controller, which fences all three after broker.session.timeout.ms and
# the partition goes offline (leader -1). Move it up to test/integration/
# once that passes.
REPL_NETCUT_MODE=hole REPL_NETCUT_CONTROLLER=1 exec bash "$(dirname "$0")/../t_repl_netcut.sh" "$@"
