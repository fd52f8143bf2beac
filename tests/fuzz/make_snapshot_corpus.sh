#!/bin/sh
# Writes the seed corpus of fuzz_snapshot (tests/fuzz/corpus_snapshot/) in the input layout that
# fuzz_snapshot.c describes: 5 bytes (particles, ranks - 1, flags, contacts, seed) and then
# 4-byte edits [object, what, a, b]. Objects: 0 format, 1 time, 2 step, 4 box_min, 5 box_max,
# 6 periodic, 7 particle_count, 8 rank_count, 11 id, 12 position, 13 velocity, 16 radius,
# 19 mass, 20 rank_offsets, 21 /contacts, 25 gap, 23 normal_impulse. What: 0 remove, 1 type,
# 2 shape, 3 set a value, 4 form, 5 layout, 6 string. Flags: 1 contacts, 2 no masses, 4 rank
# offsets as an attribute, 8 no rank information, 16 * (rows per chunk - 1).
# Usage: tests/fuzz/make_snapshot_corpus.sh [DIRECTORY]
set -eu
dir=${1:-$(dirname "$0")/corpus_snapshot}
mkdir -p "$dir"
seed() { printf "$2" > "$dir/$1"; }

# Files as the writer makes them.
seed valid-empty '\000\000\000\000\000'
seed valid-one-rank '\005\000\020\000\003'
seed valid-contacts-4-ranks '\030\003\041\014\011'
seed valid-contacts-none '\006\001\001\000\002'
seed valid-more-ranks-than-particles '\002\005\060\000\001'
seed valid-no-mass-legacy-offsets '\007\002\066\000\004'
seed valid-no-rank-information '\011\000\130\000\005'
seed valid-float32-big-endian '\004\000\020\000\000\014\001\002\000\020\001\001\000'
# Damaged: each must be refused with a message.
seed radius-nan '\004\000\020\000\000\020\003\002\000'
seed radius-zero '\004\000\000\000\000\020\003\001\003'
seed position-infinite '\004\001\020\000\000\014\003\005\001'
seed mass-negative '\003\000\000\000\000\023\003\000\005'
seed count-one-more '\005\000\020\000\000\007\003\000\045'
seed offsets-falling '\010\003\020\000\000\024\003\002\060'
seed velocity-missing '\003\000\000\000\000\015\000\000\000'
seed time-string '\002\000\000\000\000\001\001\007\011'
seed particles-a-dataset '\003\000\000\000\000\012\004\001\000'
# Regressions: each crashed tools/lib/snapshot.c, or was accepted by it, before the fix.
seed crash-format-array '\003\000\000\000\000\000\002\002\005'
seed crash-rank-count-int-max '\004\001\020\000\000\010\003\000\005'
seed crash-contacts-extent-wraps '\000\000\001\000\000\031\002\002\006\027\002\002\006'
seed crash-whole-read-wraps '\000\000\012\000\000\007\003\000\022\013\002\002\006\014\002\003\006\015\002\003\006\016\002\003\006\020\002\002\006'
seed accepted-count-zero '\003\000\010\000\000\007\003\000\000'
seed accepted-columns-2-32-wide '\003\000\000\000\000\014\002\003\050'
seed accepted-count-float '\003\000\000\000\000\007\001\001\000'
seed accepted-offsets-dangling '\005\001\000\000\000\024\004\002\000'
seed accepted-rank-count-zero '\005\001\000\000\000\010\003\000\000'
seed accepted-gap-nan '\002\000\001\003\000\031\003\001\000'
seed accepted-offsets-float '\005\001\000\000\000\024\001\001\000'
seed accepted-box-extent-infinite '\003\000\000\000\000\004\003\000\007\005\003\000\006'
seed accepted-gap-integer '\002\000\001\003\000\031\001\004\000'
