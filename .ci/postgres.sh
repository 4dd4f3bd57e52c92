# Start and stop a throw-away PostgreSQL server on loopback for the Postgres checkpointer tests.
# Sourced by .ci/run: `start_postgres` exports GRSE_POSTGRES_DSN, `stop_postgres` removes it all.
# Uses the PostgreSQL binaries already on the machine, installing them with apt-get if absent.
# The postgres server refuses to run as root, so as root it runs as the `postgres` user.

_find_pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin /usr/local/bin /usr/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

start_postgres() {
  PG_BIN="$(_find_pg_bin)" || {
    echo "PostgreSQL not found; installing it with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    PG_BIN="$(_find_pg_bin)"
  }
  PG_DIR="$(mktemp -d /tmp/grse-postgres.XXXXXX)"
  PG_AS=()
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$PG_DIR"
    PG_AS=(runuser -u postgres --)
  fi
  PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U grse --auth=trust -E UTF8 >"$PG_DIR/initdb.log"
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
    -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR" start >/dev/null
  export GRSE_POSTGRES_DSN="postgresql://grse@127.0.0.1:$PG_PORT/postgres"
  echo "PostgreSQL ($PG_BIN) on 127.0.0.1:$PG_PORT" >&2
}

stop_postgres() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  [ -n "${PG_DIR:-}" ] && rm -rf "$PG_DIR"
  return 0
}
