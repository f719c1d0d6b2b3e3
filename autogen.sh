#!/bin/sh
# autogen.sh - generate configure and Makefile.in from configure.ac.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf --install --force --warnings=all
