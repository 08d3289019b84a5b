#!/usr/bin/env bash
# t_repl_netcut.sh with the leader's peer connections black-holed instead of
# reset (tcp_proxy.py `hole`): peers see silence and must time out; the cut
# leader is made the active controller as well (quorum resign until it is).
# Regression test for issues 5/6: every broker's BrokerHeartbeat in flight
# to the silent controller used to stay unanswered forever, so nobody
# heartbeated the new controller, which fenced all brokers (partition leader
# -1). Now quorum_client requests have deadlines and the lifecycle abandons a
# round to a deposed controller.
REPL_NETCUT_MODE=hole REPL_NETCUT_CONTROLLER=1 exec bash "$(dirname "$0")/t_repl_netcut.sh" "$@"
