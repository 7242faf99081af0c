#!/bin/sh
# Register a Kafka Connect connector from a JSON file ({"name": ..., "config": {...}}).
# Usage: register.sh CONFIG.json   (Connect's URL in $CONNECT_URL, default http://connect:8083)
# HTTP 201 means created. HTTP 409 means either that the connector already exists
# (a second `docker compose up`) or that the worker group is rebalancing; a GET of the
# connector tells the two apart. Anything else is retried ($REGISTER_ATTEMPTS times,
# $REGISTER_DELAY seconds apart; by default about a minute).
set -eu
config="$1"
url="${CONNECT_URL:-http://connect:8083}/connectors"
attempts="${REGISTER_ATTEMPTS:-20}"
delay="${REGISTER_DELAY:-3}"
name=$(sed -n 's/^ *"name" *: *"\([^"]*\)".*/\1/p' "$config" | head -n 1)
response=$(mktemp)
trap 'rm -f "$response"' EXIT
attempt=1
while [ "$attempt" -le "$attempts" ]; do
  code=$(curl -sS -o "$response" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data-binary @"$config" "$url") || code=000
  if [ "$code" = 201 ]; then
    echo "registered connector $name with $url"
    exit 0
  fi
  if [ "$code" = 409 ] && curl -fsS -o /dev/null "$url/$name"; then
    echo "connector $name is already registered with $url"
    exit 0
  fi
  echo "POST $url answered HTTP $code (attempt $attempt of $attempts):"
  cat "$response" 2>/dev/null || true
  echo
  attempt=$((attempt + 1))
  sleep "$delay"
done
echo "register-connector: Connect at $url did not accept $config; see docker compose logs connect" >&2
exit 1
