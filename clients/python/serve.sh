# Sourced by check.sh and bcipy_check.sh: start_server LABEL starts a real `dasher-rnn serve` of this checkout on a
# free port ($MAIN_PY, logging to $WORK/serve.log) and sets SERVER (its PID) and URL (from its first line).
start_server() {
	(cd "$HERE/../.." && exec "$MAIN_PY" -m dasher_rnn serve --port 0 --threads 1) >"$WORK/serve.log" 2>&1 &
	SERVER=$!
	URL=
	for _ in $(seq 600); do
		URL=$(sed -n 's|^dasher-rnn serve: \(http://[^ ]*\)/v1 .*|\1|p' "$WORK/serve.log")
		[ -n "$URL" ] && break
		kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.log"; exit 1; }
		sleep 0.1
	done
	[ -n "$URL" ] || { echo "$1: the server did not start"; cat "$WORK/serve.log"; exit 1; }
}
