# Sourced by scripts/with-test-sink and scripts/with-test-pipewire: for a server at the socket
# SOCKET with a sink named musickit_test, writes WORK/asound.conf with the ALSA devices that reach
# it and exports what the tests and the benchmarks look for:
#   musickit_test_sink        ALSA pulse plugin -> the sink
#   musickit_test_tee:FILE=P  records every frame written (raw S16_LE) and plays it to the sink
#   pulseaudio:musickit_test  the engine's native PulseAudio output -> the sink
# Usage: export_test_devices WORK SOCKET
export_test_devices() {
  local work=$1 socket=$2
  export PULSE_SERVER="unix:$socket"
  cat > "$work/asound.conf" <<CONF
pcm.musickit_test_sink { type pulse; server "unix:$socket"; device "musickit_test" }
ctl.musickit_test_sink { type pulse; server "unix:$socket" }
pcm.musickit_test_tee {
  @args [ FILE ]
  @args.FILE { type string }
  type file
  slave.pcm "musickit_test_sink"
  file \$FILE
  format raw
}
CONF
  export ALSA_CONFIG_PATH="/usr/share/alsa/alsa.conf:$work/asound.conf"
  export MUSICKIT_TEST_PULSE_DEVICE=musickit_test_sink
  export MUSICKIT_TEST_PULSE_NATIVE_DEVICE=pulseaudio:musickit_test
  export MUSICKIT_TEST_PULSE_MONITOR=musickit_test.monitor
  export MUSICKIT_TEST_TEE_DEVICE=musickit_test_tee
  export MUSICKIT_TEST_REQUIRE_AUDIO_SERVER=1
}
