import AudioEngine
import AudioMeasurement
import Foundation

// musickit-bench: measures the engine and other players through the same PulseAudio null
// sink, in one run, and prints a Markdown table (stdout) of median, min and max.
// Run it through scripts/bench, which starts the sink.

let usage = """
usage: musickit-bench [--runs N] [--only GROUP[,GROUP...]] [--no-peers] [--songs N] [--mutants N] [--fuzz-seed N]
                      [--protocol-cases N] [--cost-rounds N] [--cost-window SECONDS] [--output FILE]

groups: cost, ttfa, skip, seek, volume, loudness, gap, cpu, load (60 s under stress-ng, then beside clean debug builds of
this package), player, preview, system, ring, decode, cli, screens, peers,
catalog, library, snapcast (two rooms on Snapcast: sync over a minute, and `next`, musickitd beside MPD's fifo output), and
fuzz (only when asked for: decoder fuzzing through `musickit probe`, then protocol fuzzing of musickitd's MPD
socket, wire and MPRIS, on the test sink; exits 1 when a mutant crashed or hung, or the daemon stopped answering)
cost: CPU, wake-ups and the sound server's CPU per second of steady playback, playing and paused, for musickit
(CLI and daemon), MPD, mpv and paplay in turn (--cost-rounds N rounds, default 3, of --cost-window SECONDS, default 15)
--songs N: songs in the generated catalog (default 1,000,000)
--mutants N, --fuzz-seed N: how many mutated files the fuzz group decodes (default 2,000), and its seed (also the
protocol fuzzer's); --protocol-cases N: how many hostile requests it sends musickitd (default 3,000)
Needs MUSICKIT_TEST_PULSE_DEVICE and MUSICKIT_TEST_PULSE_MONITOR (scripts/with-test-sink sets them)
for every group but ring and decode.
MUSICKIT_BENCH_CLI: the musickit to time (scripts/bench passes scripts/build's); MUSICKIT_BENCH_CLI_OTHER:
another build, started in turn with it run by run in the cli and cost groups (rows marked [other build];
the cost group takes the musickitd beside it, or MUSICKITD_OTHER), to compare two builds in one run on
this noisy machine.
MUSICKIT_BENCH_BUFFER_MS, MUSICKIT_BENCH_REFILL_US: the engine rows' device buffer and refill (default the
engine's, 750 ms and 180 ms), to compare configurations in one build (50 and 5805: the 50 ms buffer of before
the deep buffer).
"""

var runs = 9
var only: Set<String>?
var withPeers = true
var outputPath: String?
var catalogSongs = 1_000_000
var mutants = 2_000
var fuzzSeed: UInt64 = 20_261_130
var protocolCases = 3_000
var costRounds = 3
var costWindowSeconds = 15.0
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--runs":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else { print(usage); exit(2) }
        runs = value
        arguments.removeFirst()
    case "--only":
        guard let value = arguments.first else { print(usage); exit(2) }
        only = Set(value.split(separator: ",").map(String.init))
        arguments.removeFirst()
    case "--no-peers": withPeers = false
    case "--mutants":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else { print(usage); exit(2) }
        mutants = value
        arguments.removeFirst()
    case "--fuzz-seed":
        guard let value = arguments.first.flatMap(UInt64.init) else { print(usage); exit(2) }
        fuzzSeed = value
        arguments.removeFirst()
    case "--protocol-cases":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else { print(usage); exit(2) }
        protocolCases = value
        arguments.removeFirst()
    case "--cost-rounds":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else { print(usage); exit(2) }
        costRounds = value
        arguments.removeFirst()
    case "--cost-window":
        guard let value = arguments.first.flatMap(Double.init), value > 0 else { print(usage); exit(2) }
        costWindowSeconds = value
        arguments.removeFirst()
    case "--songs":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else { print(usage); exit(2) }
        catalogSongs = value
        arguments.removeFirst()
    case "--output":
        guard let value = arguments.first else { print(usage); exit(2) }
        outputPath = value
        arguments.removeFirst()
    case "-h", "--help": print(usage); exit(0)
    default: FileHandle.standardError.write("unknown argument \(argument)\n\n\(usage)\n".data(using: .utf8)!); exit(2)
    }
}

@MainActor func wants(_ group: String) -> Bool {
    only?.contains(group) ?? (group != "fuzz" && (group != "peers" || withPeers))
}

let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
let repository = executable.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let assets = repository.appendingPathComponent("Assets")
// The CLI as scripts/build makes it (scripts/bench says where), else the one built beside this.
let musickit = ProcessInfo.processInfo.environment["MUSICKIT_BENCH_CLI"].map { URL(fileURLWithPath: $0) }
    ?? executable.deletingLastPathComponent().appendingPathComponent("musickit")
let otherMusickit = ProcessInfo.processInfo.environment["MUSICKIT_BENCH_CLI_OTHER"].map { URL(fileURLWithPath: $0) }

let report = Report()
let fixtures = try Fixtures(assets: assets)
defer { fixtures.remove() }

let throughput = ThroughputBenchmarks(fixtures: fixtures, runs: runs, report: report)
if wants("ring") { progress("ring buffer"); throughput.ringBuffer() }
if wants("decode") { progress("decoding"); try throughput.decoding() }
if wants("library") { progress("library"); try LibraryBenchmarks(fileCount: 10_000, runs: runs, report: report).run() }
var fuzzFound = false
if wants("fuzz") {
    progress("decoder fuzzing: \(mutants) mutants")
    let findings = try FuzzBenchmarks(musickit: musickit, mutants: mutants, seed: fuzzSeed, report: report)
        .run(findingsDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent(".build/fuzz-findings"))
    fuzzFound = !findings.crashes.isEmpty || !findings.hangs.isEmpty
    let processEnvironment = ProcessInfo.processInfo.environment
    if let device = processEnvironment["MUSICKIT_TEST_PULSE_NATIVE_DEVICE"] ?? processEnvironment["MUSICKIT_TEST_PULSE_DEVICE"] {
        progress("protocol fuzzing: \(protocolCases) cases against musickitd")
        let musickitd = processEnvironment["MUSICKITD"].map { URL(fileURLWithPath: $0) }
            ?? musickit.deletingLastPathComponent().appendingPathComponent("musickitd")
        let protocolFindings = try ProtocolFuzzBenchmarks(musickitd: musickitd, device: device, cases: protocolCases, seed: fuzzSeed,
                                                          songs: [fixtures.sweep, fixtures.silence, fixtures.gaplessFirst],
                                                          report: report)
            .run(findingsDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
                .appendingPathComponent(".build/fuzz-findings"))
        fuzzFound = fuzzFound || !protocolFindings.failures.isEmpty
    } else {
        progress("protocol fuzzing: skipped (no test sink: run through scripts/bench or scripts/with-test-sink)")
    }
}
if wants("catalog") {
    progress("catalog of \(catalogSongs) songs")
    try CatalogBenchmarks(songCount: catalogSongs, runs: runs, report: report).run()
}

let environment = ProcessInfo.processInfo.environment
let realTimeGroups = ["cost", "ttfa", "skip", "seek", "volume", "loudness", "gap", "cpu", "load", "player", "preview", "system", "cli", "screens", "peers",
                      "snapcast"]
if realTimeGroups.contains(where: { wants($0) }) {
    guard let device = environment["MUSICKIT_TEST_PULSE_DEVICE"], let monitor = environment["MUSICKIT_TEST_PULSE_MONITOR"] else {
        progress("no PulseAudio test sink: run through scripts/bench (or scripts/with-test-sink)")
        exit(1)
    }
    if wants("cost") {
        // Before the monitor's recorder starts: its latency would set the sink's block for all.
        if let nativeDevice = environment["MUSICKIT_TEST_PULSE_NATIVE_DEVICE"],
           case let serverPIDs = (environment["MUSICKIT_TEST_SERVER_PID"] ?? "").split(separator: " ").compactMap({ Int32($0) }),
           !serverPIDs.isEmpty {
            progress("cost of steady playback and of pause")
            let musickitd = environment["MUSICKITD"].map { URL(fileURLWithPath: $0) }
                ?? musickit.deletingLastPathComponent().appendingPathComponent("musickitd")
            func installed(_ url: URL) -> URL? { FileManager.default.isExecutableFile(atPath: url.path) ? url : nil }
            let other = otherMusickit.map { other in
                (other, environment["MUSICKITD_OTHER"].map { URL(fileURLWithPath: $0) }
                    ?? installed(other.deletingLastPathComponent().appendingPathComponent("musickitd")))
            }
            var cost = CostBenchmarks(musickit: musickit, musickitd: installed(musickitd), other: other,
                                      nativeDevice: nativeDevice, pluginDevice: device, serverPIDs: serverPIDs, fixtures: fixtures,
                                      assets: assets, rounds: costRounds, windowSeconds: costWindowSeconds, report: report)
            // Snapcast's rows, when it is installed: snapserver (FLAC, 1,000 ms) and one room in the test sink.
            let snapcast = SnapcastServer.isInstalled ? try SnapcastServer(directory: fixtures.directory) : nil
            defer { snapcast?.stop() }
            try snapcast?.addRoom(1)
            cost.snapcast = snapcast
            try cost.run()
        } else {
            progress("cost: skipped (MUSICKIT_TEST_PULSE_NATIVE_DEVICE and MUSICKIT_TEST_SERVER_PID: scripts/with-test-sink sets them)")
        }
    }
    let recorder = try MonitorRecorder(source: monitor, latencyMilliseconds: 2)
    progress("warming up the monitor recorder (2.5 s)")
    recorder.warmUp()
    // The same sink through the engine's own libpulse stream instead of ALSA's pulse plugin.
    let nativeDevice = environment["MUSICKIT_TEST_PULSE_NATIVE_DEVICE"]
    let peers = PeerBenchmarks(device: device, nativeDevice: nativeDevice,
                               recorder: recorder, fixtures: fixtures, runs: runs, report: report, musickit: musickit,
                               otherMusickit: otherMusickit)
    // The control first: every start is judged by the frames the monitor cannot see (paplay).
    progress("control: paplay's landing frames")
    let (floor, control) = peers.landingFloor()
    progress("  landing floor: \(floor) frames (one sink block: \(recorder.blockFrames); paplay's largest landing: "
             + "\(control.compactMap(\.landingFrame).max().map(String.init) ?? "–"))")
    let engine = EngineBenchmarks(device: device, recorder: recorder, fixtures: fixtures, runs: runs, report: report,
                                  landingFloor: floor)
    if wants("ttfa") { progress("time to first audio"); engine.timeToFirstAudio() }
    if wants("skip") { progress("skip latency"); engine.skipLatency() }
    if wants("seek") { progress("seek latency"); engine.seekLatency() }
    if wants("volume") { progress("volume change"); engine.volumeLatency() }
    if let nativeDevice {
        let native = EngineBenchmarks(device: nativeDevice, name: "engine (native PulseAudio)", recorder: recorder,
                                      fixtures: fixtures, runs: runs, report: report, landingFloor: floor)
        if wants("ttfa") { progress("time to first audio, native PulseAudio"); native.timeToFirstAudio() }
        if wants("skip") { progress("skip latency, native PulseAudio"); native.skipLatency() }
        if wants("seek") { progress("seek latency, native PulseAudio"); native.seekLatency() }
        if wants("volume") { progress("volume change, native PulseAudio"); native.volumeLatency() }
        if wants("load") {
            progress("60 s under load, native PulseAudio")
            native.underLoad()
            progress("60 s beside a debug build, native PulseAudio")
            native.underLoad(.debugBuild(package: repository))
        }
    }
    if wants("loudness") {
        progress("loudness: measuring the previews, then each heard without and with Sound Check")
        try LoudnessBenchmarks(device: device, recorder: recorder, assets: assets, report: report).run()
    }
    if wants("gap") { progress("gapless boundary"); engine.gaplessBoundary() }
    if wants("cpu") { progress("audio thread CPU"); engine.audioThreadCPU() }
    if wants("load") {
        progress("60 s under load")
        engine.underLoad()
        progress("60 s beside a debug build")
        engine.underLoad(.debugBuild(package: repository))
    }
    // The players on the device they take by default where a server is there (natively:
    // `AudioEngineConfiguration.automaticDeviceName`), the engine rows above on both.
    let playerDevice = nativeDevice ?? device
    if wants("player") {
        progress("ApplicationMusicPlayer")
        try PlayerBenchmarks(device: playerDevice, recorder: recorder, fixtures: fixtures, runs: runs, report: report,
                             landingFloor: floor).run()
    }
    if wants("preview") {
        progress("remote preview: play() while it downloads, and mpv")
        try PreviewBenchmarks(device: playerDevice, recorder: recorder, fixtures: fixtures, runs: runs, report: report,
                              landingFloor: floor, peers: peers).run()
    }
    if wants("system") {
        progress("SystemMusicPlayer through musickitd")
        try SystemPlayerBenchmarks(device: playerDevice, recorder: recorder, fixtures: fixtures, runs: runs, report: report,
                                   landingFloor: floor, musickit: musickit).run()
    }
    if wants("cli") { progress("command-line start"); peers.commandLineTTFA(floor: floor, control: control) }
    if wants("screens") {
        progress("terminal screens: key -> screen")
        try ScreenBenchmarks(musickit: musickit, device: device, song: assets.appendingPathComponent("Previews/mx-ar-01.ogg"),
                             runs: runs, report: report).run()
    }
    if wants("peers") {
        progress("peers: gaps"); peers.gaps()
        progress("peers: mpv skip"); peers.mpvSkip(floor: floor)
        progress("peers: MPD"); try peers.mpd(floor: floor)
    }
    if wants("snapcast") {
        progress("Snapcast: two rooms")
        try SnapcastBenchmarks(musickit: musickit, mpd: PeerBenchmarks.installed("mpd"), pluginDevice: device, room1: recorder,
                               fixtures: fixtures, report: report).run()
    }
    recorder.stop()

    // What the player adds to the engine, and ratios against the peers, same run.
    var ratios: [String] = []
    func difference(_ ours: String, _ base: String) {
        if let a = report.median(ours), let b = report.median(base) {
            ratios.append("- \(ours) − \(base): \(a >= b ? "+" : "")\(format(a - b)) ms")
        }
    }
    difference("player TTFA cold: play() -> sound", "engine TTFA cold: play() -> sound")
    difference("player TTFA after prepareToPlay(): play() -> sound", "engine TTFA after prepare(): play() -> sound")
    difference("player skip: skipToNextEntry() -> next entry's sound", "engine skip: skipToNextEntry() -> next entry's sound")
    func ratio(_ ours: String, _ theirs: String) {
        if let a = report.median(ours), let b = report.median(theirs), b > 0 {
            ratios.append("- \(ours) / \(theirs): \(format(a / b))")
        }
    }
    for output in ["pulse output", "ALSA output"] {
        for engine in ["engine", "engine (native PulseAudio)"] {
            ratio("\(engine) TTFA after prepare(): play() -> sound", "MPD (\(output)) TTFA: `play` on an open connection -> sound")
            ratio("\(engine) TTFA cold: play() -> sound", "MPD (\(output)) TTFA: `play` on an open connection -> sound")
            ratio("\(engine) skip: skipToNextEntry() -> next entry's sound", "MPD (\(output)) skip: `next` on an open connection -> next file's sound")
            ratio("\(engine) seek: seek(toFrame:) -> sound at the target", "MPD (\(output)) seek: `seekcur 2` -> sound at the target")
        }
        ratio("player TTFA after prepareToPlay(): play() -> sound", "MPD (\(output)) TTFA: `play` on an open connection -> sound")
        ratio("player skip: skipToNextEntry() -> next entry's sound", "MPD (\(output)) skip: `next` on an open connection -> next file's sound")
        ratio("system player TTFA after prepareToPlay(): play() -> sound", "MPD (\(output)) TTFA: `play` on an open connection -> sound")
        ratio("system player skip: skipToNextEntry() -> next entry's sound", "MPD (\(output)) skip: `next` on an open connection -> next file's sound")
        ratio("musickit next (CLI) -> next entry's sound", "MPD (\(output)) skip via `mpc next` -> next file's sound")
        ratio("musickitd via `mpc next` -> next entry's sound", "MPD (\(output)) skip via `mpc next` -> next file's sound")
        ratio("musickitd TTFA via `mpc play` -> sound", "MPD (\(output)) TTFA via `mpc play` -> sound")
    }
    ratio("engine skip: skipToNextEntry() -> next entry's sound", "mpv skip: playlist-next over IPC -> next file's sound")
    for subject in ["musickit play FILE (native PulseAudio)", "musickit play FILE (ALSA pulse plugin)", "musickitd"] {
        for measure in ["player + server CPU", "player wake-ups", "server CPU"] {
            ratio("cost, playing: \(subject) — \(measure)", "cost, playing: MPD (pulse output) — \(measure)")
        }
    }
    for measure in ["player + server CPU", "player wake-ups"] {
        ratio("cost, paused: musickitd — \(measure)", "cost, paused: MPD (pulse output) — \(measure)")
    }
    ratio("musickit play FILE (CLI, its default device) TTFA: process start -> sound", "aplay TTFA: process start -> sound")
    ratio("musickit play (CLI) TTFA: process start -> sound", "aplay TTFA: process start -> sound")
    ratio("musickit play (CLI) TTFA: process start -> sound", "mpv TTFA: process start -> sound")
    ratio("musickit play --device pulseaudio (CLI) TTFA: process start -> sound", "aplay TTFA: process start -> sound")
    ratio("musickit play --device pulseaudio (CLI) TTFA: process start -> sound", "paplay TTFA: process start -> sound")
    let header = """
    Measured through a PulseAudio \(PeerBenchmarks.installed("pulseaudio") != nil ? "" : "(?) ")null sink, \
    monitor recorded by parec --latency-msec=\(recorder.latencyMilliseconds); \(runs) runs each; \
    \(ProcessInfo.processInfo.activeProcessorCount) cores; \(AudioFileDecoder.libraryVersion). A start (TTFA, skip, \
    seek) counts only when nothing was heard before the call, the heard audio is the track from the frame that \
    should come first, within \(floor) frames (one block of the sink, \(recorder.blockFrames) frames, or the control \
    paplay's largest landing if later: the first frames of new audio are often never seen at the monitor), and the \
    next second matches the file bit for bit; other runs are counted as failed, not timed.
    """
    let table = header + "\n\n" + report.markdown() + (ratios.isEmpty ? "" : "\n\nDifferences and ratios (medians, same run; a ratio below 1 is faster):\n" + ratios.joined(separator: "\n"))
    print(table)
    if let outputPath { try table.write(toFile: outputPath, atomically: true, encoding: .utf8) }
} else {
    let table = report.markdown()
    print(table)
    if let outputPath { try table.write(toFile: outputPath, atomically: true, encoding: .utf8) }
}
if fuzzFound { exit(1) }
