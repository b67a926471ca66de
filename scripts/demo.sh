#!/usr/bin/env bash
# The mirrorspec demo (`make demo`): compile an example project, land its sample files in two
# steps (initial load, then incremental changes), mirror them into Delta tables and look at them.
#
#   scripts/demo.sh [PROJECT_DIR]      default: projects/parquet_orders
#
# The project is copied into a work folder first, so the repository stays clean:
# $MIRRORSPEC_DEMO_DIR, else a fresh temporary folder. Either is kept, so the Delta tables,
# target/ artifacts and docs site can be looked at afterwards; MIRRORSPEC_DEMO_KEEP=0 removes a
# temporary folder at the end. The project's sample landing files are its seed_files/ folder,
# laid out like the landing zone: <schema>.schema/<table>/000…01.parquet, 000…02.parquet.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="${1:-projects/parquet_orders}"
case "$PROJECT" in /*) ;; *) PROJECT="$REPO/$PROJECT" ;; esac
MIRRORSPEC="${MIRRORSPEC:-$REPO/.venv/bin/mirrorspec}"

if [ ! -f "$PROJECT/mirrorspec_project.yml" ]; then
  echo "demo: $PROJECT is not a mirrorspec project (no mirrorspec_project.yml)" >&2
  exit 1
fi
if [ ! -d "$PROJECT/seed_files" ]; then
  echo "demo: $PROJECT has no seed_files/ folder with sample landing files" >&2
  exit 1
fi
if [ ! -x "$MIRRORSPEC" ]; then
  echo "demo: $MIRRORSPEC not found; run \`make demo\` (it builds .venv first)" >&2
  exit 1
fi

if [ -n "${MIRRORSPEC_DEMO_DIR:-}" ]; then
  WORK="$MIRRORSPEC_DEMO_DIR"
  rm -rf "$WORK"
  mkdir -p "$WORK"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/mirrorspec-demo.XXXXXX")"
  if [ "${MIRRORSPEC_DEMO_KEEP:-1}" = "0" ]; then
    trap 'rm -rf "$WORK"' EXIT
  fi
fi
DEMO="$WORK/$(basename "$PROJECT")"
mkdir -p "$DEMO"
# The project without anything a previous run produced.
tar -C "$PROJECT" --exclude=./target --exclude=./landing_zone --exclude=./warehouse \
    --exclude=./logs --exclude=__pycache__ -cf - . | tar -C "$DEMO" -xf -

# Wide enough tables when the output is not a terminal (rich reads COLUMNS).
if [ ! -t 1 ]; then export COLUMNS="${COLUMNS:-140}"; fi

# Colour only on a terminal (and never with NO_COLOR): a piped log gets plain text.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1;36m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi
# Spark's start-up chatter (JVM and log4j notices before the log level applies) is dropped;
# every other line of stderr is shown.
quiet_jvm() {
  grep -v -E '^(WARNING: Using incubator modules|Using Spark.s default log4j profile|Setting default log level|To adjust logging level|[0-9/]+ [0-9:]+ WARN (Utils|NativeCodeLoader|SparkStringUtils):)' >&2 || true
}
ms() { echo "\$ mirrorspec $*"; "$MIRRORSPEC" "$@" 2> >(quiet_jvm); }

# Landing-zone settings come from the project's profile; find where it put the landing zone.
plan_field() {
  "$REPO/.venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$DEMO/target/plan.json" "$1"
}
landing_zone() { plan_field landing_zone; }

# Copy the sample files with the given 20-digit sequence into the landing zone.
land() {
  local sequence="$1" lz count=0
  lz="$(landing_zone)"
  while IFS= read -r -d '' file; do
    rel="${file#"$DEMO/seed_files/"}"
    mkdir -p "$lz/$(dirname "$rel")"
    cp "$file" "$lz/$rel"
    echo "  landed $rel"
    count=$((count + 1))
  done < <(find "$DEMO/seed_files" -type f -name "${sequence}.*" -print0 | sort -z)
  [ "$count" -gt 0 ] || echo "  (no sample file ${sequence}.*)"
}

cd "$DEMO"
step "Project copied to $DEMO"

step "Compile: validate the YAML, write _metadata.json files and target/plan.json"
ms compile --project-dir .
TABLE="${MIRRORSPEC_DEMO_TABLE:-$("$REPO/.venv/bin/python" -c '
import json; tables = json.load(open("target/plan.json"))["tables"]
ids = [t["unique_id"] for t in tables]
print(next((i for i in ids if i.endswith(".customers")), ids[0]))')}"

step "Land the initial load (files 00000000000000000001)"
land 00000000000000000001

step "Run: mirror the landing zone into Delta tables"
ms run --project-dir .

step "Show $TABLE after the initial load"
ms show "$TABLE" --project-dir .

step "Land the incremental changes (files 00000000000000000002: updates, deletes, upserts, key changes)"
land 00000000000000000002

step "Build: run again (only the new files are applied), then the data tests"
ms build --project-dir .

step "Status: the Fabric-shaped monitoring JSON"
ms status --project-dir .

step "Show $TABLE now, and as it was at Delta version 0 (time travel)"
ms show "$TABLE" --project-dir .
ms show "$TABLE" --project-dir . --version 0

step "History of $TABLE: each commit with the landing files it applied"
ms history "$TABLE" --project-dir .

step "Docs: the catalog site of the mirrored tables"
ms docs generate --project-dir .

step "Lint the landing zone against the open-mirroring contract (pure Python, no JVM)"
ms lint "$(landing_zone)"

if [ -f source_extract/customers.csv ]; then
  step "Reconcile sales.customers with its source extract (source_extract/customers.csv)"
  ms reconcile sales.customers --warehouse "$(plan_field warehouse)" \
     --against source_extract/customers.csv --master local[2]
fi

if [ "${MIRRORSPEC_DEMO_KEEP:-1}" = "0" ] && [ -z "${MIRRORSPEC_DEMO_DIR:-}" ]; then
  step "Done (the work folder $WORK is removed: MIRRORSPEC_DEMO_KEEP=0)"
else
  step "Done. Everything is kept in $DEMO"
  echo "  run results:  $DEMO/target/run_results.json, $DEMO/target/test_results.json"
  echo "  Delta tables: $(plan_field warehouse)"
  echo "  docs site:    $DEMO/target/docs/index.html (serve it: .venv/bin/mirrorspec docs serve --project-dir $DEMO)"
  echo "  remove it with: rm -rf $WORK   (MIRRORSPEC_DEMO_KEEP=0 make demo removes it itself)"
fi
