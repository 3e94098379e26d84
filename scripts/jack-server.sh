# Sourced by scripts: start a private jackd (dummy driver, no sound card needed) and stop it on exit.
#   start_private_jackd NAME [PERIOD]   exports JACK_DEFAULT_SERVER=NAME
# JACKD_REALTIME=1 asks for real-time scheduling (jackd -R); without the right to it, jackd
# falls back to no real-time on its own terms, so callers check JACKD_MODE afterwards.
start_private_jackd() {
    local name="$1" period="${2:-256}"
    # jack2 keeps a registry of at most 8 servers in /dev/shm; a jackd that died by SIGKILL leaves
    # its entry behind. With no jackd running at all, every entry is stale: clear them.
    if ! pgrep -x jackd >/dev/null && ls /dev/shm/jack-shm-registry >/dev/null 2>&1; then
        rm -f /dev/shm/jack-shm-registry /dev/shm/jack-[0-9]* /dev/shm/jack_* 2>/dev/null || true
    fi
    JACKD_LOG=$(mktemp "${TMPDIR:-/tmp}/jackd-$name.XXXXXX.log")
    local mode="--no-realtime"
    [ "${JACKD_REALTIME:-0}" = 1 ] && mode="-R"
    jackd $mode -n "$name" -d dummy -r 48000 -p "$period" -C 2 -P 2 >"$JACKD_LOG" 2>&1 &
    JACKD_PID=$!
    trap 'stop_private_jackd' EXIT
    local tries=0
    until jack_server_running "$name"; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ] || ! kill -0 "$JACKD_PID" 2>/dev/null; then break; fi
        sleep 0.1
    done
    if ! jack_server_running "$name"; then
        echo "could not start jackd:" >&2
        cat "$JACKD_LOG" >&2
        return 1
    fi
    export JACK_DEFAULT_SERVER="$name"
    if grep -q "starting in realtime mode" "$JACKD_LOG"; then JACKD_MODE=realtime; else JACKD_MODE=no-realtime; fi
}

stop_private_jackd() {
    if [ -n "${JACKD_PID:-}" ]; then
        kill "$JACKD_PID" 2>/dev/null || true
        wait "$JACKD_PID" 2>/dev/null || true
        JACKD_PID=""
    fi
    if [ -n "${JACKD_LOG:-}" ]; then rm -f "$JACKD_LOG"; JACKD_LOG=""; fi
}

# Whether a JACK server named $1 (or the default one) answers, without starting one.
jack_server_running() {
    local answer
    if [ -n "${1:-}" ]; then answer=$(JACK_NO_START_SERVER=1 jack_wait -s "$1" -c 2>/dev/null)
    else answer=$(JACK_NO_START_SERVER=1 jack_wait -c 2>/dev/null); fi
    [ "$answer" = "running" ]
}
