#!/usr/bin/env bash
# Writes an SMPI platform for N hosts on one ideal switch, and its hostfile.
#
#   star_platform.sh N BANDWIDTH LATENCY PLATFORM.xml HOSTFILE
#   e.g. star_platform.sh 16 25GBps 1us star-16.xml star-16.hosts
#
# BANDWIDTH and LATENCY use SimGrid's units (25GBps = 25e9 bytes/s, 1us). The platform is one
# <cluster>: host i has a private SPLITDUPLEX link (BANDWIDTH each way, LATENCY), the switch is a
# FATPIPE backbone of huge bandwidth and zero latency, so host i -> host j crosses
# [link_i UP] [backbone] [link_j DOWN]: latency 2 x LATENCY, bottleneck BANDWIDTH, and a host
# can send and receive at full rate at once (full duplex; SHARED host links put both directions
# on one capacity and nearly double the bandwidth term: measured 217.3 us instead of 138.7 us for
# 1 MiB on 16 ranks). Each host also gets an ideal loopback link (huge bandwidth, zero latency)
# for lr's opening send-to-self copy; with SimGrid 3.32 that copy cost nothing measurable
# without it either (and the backbone changes nothing), but it keeps the platform explicit.
#
#        host0 ──l0──┐
#        host1 ──l1──┼── backbone (FATPIPE, 1 PBps, 0 s)
#        ...         │
#        hostN-1 ────┘
set -euo pipefail
if [[ $# -ne 5 ]]; then
  echo "usage: $0 N BANDWIDTH LATENCY PLATFORM.xml HOSTFILE" >&2
  exit 2
fi
n=$1 bw=$2 lat=$3 xml=$4 hosts=$5
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: N must be a positive integer, got '$n'" >&2
  exit 2
fi
cat >"$xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <!-- gradsync V1 (SMPI as a peer): $n hosts, one ideal switch, $bw / $lat per host link. -->
  <cluster id="star" prefix="host" suffix="" radical="0-$((n - 1))" speed="1Gf"
           bw="$bw" lat="$lat" sharing_policy="SPLITDUPLEX"
           bb_bw="1PBps" bb_lat="0s" bb_sharing_policy="FATPIPE"
           loopback_bw="1PBps" loopback_lat="0s"/>
</platform>
XML
: >"$hosts"
for ((i = 0; i < n; i++)); do echo "host$i" >>"$hosts"; done
