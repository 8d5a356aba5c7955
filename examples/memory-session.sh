#!/usr/bin/env bash
# A short memory session against a running `make run` server (default 127.0.0.1:8765).
set -euo pipefail
BASE=${MNEMO_URL:-http://127.0.0.1:8765}
call() { curl -s "$BASE/v1/tools/$1" -H 'Content-Type: application/json' "${@:3}" -d "$2"; echo; }

call memory_add '{"content": "User prefers functional programming patterns over OOP", "tags": ["preferences"]}'
call memory_add '{"content": "Project Atlas uses PostgreSQL 16 for every new service", "layer": "project"}' \
  -H 'X-Mnemo-Project: atlas'
call memory_search '{"query": "What are the user'\''s coding preferences?"}'
call memory_search '{"query": "Which database should a new service use?"}' -H 'X-Mnemo-Project: atlas'
call memory_search '{"query": "What will the weather be in Paris tomorrow?"}'
