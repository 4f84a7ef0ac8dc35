import AudioEngine
import AudioMeasurement
import Foundation

/// Two rooms on Snapcast (issue #46), fed by musickitd and, in the same run, by MPD's `fifo`
/// output: snapserver with its defaults (1,000 ms buffer, FLAC to its clients) and two
/// snapclients playing into two sinks of the test server, each recorded at its monitor (2 ms).
///
/// - sync: a minute of clicks (one every 250 ms); each click in room 2 against room 1's, in ms
///   (median and largest of the absolute offsets).
/// - next: `musickit next` (or `mpc next`) between songs that are silent and loud in turn, to
///   when the next song is heard in each room.
struct SnapcastBenchmarks {
    let musickit: URL
    let mpd: URL?
    let pluginDevice: String
    /// The recorder of the test sink, room 1's.
    let room1: MonitorRecorder
    let fixtures: Fixtures
    let report: Report
    var skips = 6

    private static let rate = 44_100
    private static let bufferMilliseconds = 1_000

    /// The commands one subject is driven by.
    private struct Subject {
        let name: String
        let nextCommand: String
        /// Plays the files (names in the fixtures' folder) from the first.
        let play: ([String]) throws -> Void
        let next: () throws -> Void
        let stop: () -> Void
    }

    func run() throws {
        guard SnapcastServer.isInstalled else {
            progress("  snapcast: skipped (snapserver and snapclient: scripts/setup-system installs them)")
            return
        }
        let sink2 = try LoadedNullSink(name: "musickit_room2", sampleRate: Self.rate)
        defer { sink2.unload() }
        let room2 = try MonitorRecorder(source: sink2.monitor, latencyMilliseconds: 2)
        defer { room2.stop() }
        room2.warmUp(seconds: 0.5)
        let snapcast = try SnapcastServer(directory: fixtures.directory)
        defer { snapcast.stop() }
        try snapcast.addRoom(1)
        try snapcast.addRoom(2, sink: sink2.name)

        // A minute of clicks; silent and loud (a sweep) songs in turn for the skips.
        var clicks = [Float](repeating: 0, count: Self.rate * 60 * 2)
        for frame in stride(from: Self.rate / 4 + 7, to: Self.rate * 60, by: Self.rate / 4) {
            clicks[frame * 2] = 0.9
            clicks[frame * 2 + 1] = 0.9
        }
        try Fixtures.write(fixtures.directory.appendingPathComponent("snapcast-clicks.flac"), clicks, format: .flac16)
        try Fixtures.write(fixtures.directory.appendingPathComponent("snapcast-silence.flac"),
                           [Float](repeating: 0, count: Self.rate * 20 * 2), format: .flac16)
        try Fixtures.write(fixtures.directory.appendingPathComponent("snapcast-sweep.flac"),
                           Fixtures.sweepSignal(frames: Self.rate * 20), format: .flac16)

        for subject in try subjects(snapcast) {
            defer { subject.stop() }
            progress("  snapcast: \(subject.name), a minute in two rooms")
            let call = monotonicNanoseconds()
            try subject.play(["snapcast-clicks.flac"])
            Thread.sleep(forTimeInterval: 60 + Double(Self.bufferMilliseconds) / 1_000 + 1.5)
            let offsets = MonitorRecorder.offsets(room2.clickTimes(after: call), against: room1.clickTimes(after: call))
            let absolute = offsets.map(abs)
            report.add(Row("snapcast, \(subject.name): offset between two rooms, a minute of clicks", unit: "ms", values: absolute,
                           note: "largest \(absolute.max().map(format) ?? "–") ms, \(offsets.count) of 240 clicks heard in both; "
                               + "mean signed \(offsets.isEmpty ? "–" : format(offsets.reduce(0, +) / Double(offsets.count))) ms"))

            progress("  snapcast: \(subject.name), \(skips) × \(subject.nextCommand)")
            try subject.play(["snapcast-silence.flac"] + Array(repeating: ["snapcast-sweep.flac", "snapcast-silence.flac"], count: skips / 2 + 1).flatMap { $0 })
            Thread.sleep(forTimeInterval: Double(Self.bufferMilliseconds) / 1_000 + 1.5)
            var heard1: [Double] = [], heard2: [Double] = [], between: [Double] = []
            for skip in 0..<skips {
                let call = monotonicNanoseconds()
                try subject.next()
                Thread.sleep(forTimeInterval: Double(Self.bufferMilliseconds) / 1_000 + 1.2)
                let loud = skip % 2 == 0  // silence → sweep, then sweep → silence
                if let one = room1.levelChange(after: call, toLoud: loud), let two = room2.levelChange(after: call, toLoud: loud) {
                    heard1.append(one)
                    heard2.append(two)
                    between.append(abs(two - one))
                }
            }
            report.add(Row("snapcast, \(subject.name): \(subject.nextCommand) -> next song heard in room 1", unit: "ms", values: heard1,
                           note: "\(heard1.count) of \(skips) heard in both rooms; Snapcast's buffer is \(Self.bufferMilliseconds) ms"))
            report.add(Row("snapcast, \(subject.name): \(subject.nextCommand) -> next song heard in room 2", unit: "ms", values: heard2))
            report.add(Row("snapcast, \(subject.name): the same skip, room 2 − room 1", unit: "ms", values: between))
        }
    }

    /// musickitd playing to the FIFO, and MPD's fifo output when MPD is installed.
    private func subjects(_ snapcast: SnapcastServer) throws -> [Subject] {
        let work = fixtures.directory.appendingPathComponent("snapcast-\(getpid())")
        var environment = ProcessInfo.processInfo.environment
        for (key, folder) in [("MUSICKIT_CONFIG_DIR", "config"), ("MUSICKIT_DATA_DIR", "data"), ("MUSICKIT_RUNTIME_DIR", "runtime")] {
            let url = work.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            environment[key] = url.path
        }
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        environment["MUSICKIT_AUDIO_DEVICE"] = "snapcast:\(snapcast.fifo)?rate=\(Self.rate)&buffer=\(Self.bufferMilliseconds)"
        let directory = fixtures.directory
        func musickit(_ arguments: [String]) throws {
            let result = try runTool(self.musickit.path, arguments, environment: environment)
            if result.code != 0 { progress("  musickit \(arguments.joined(separator: " ")): \(result.out)") }
        }
        var subjects = [Subject(name: "musickitd", nextCommand: "`musickit next`", play: { names in
            try musickit(["play", "--system"] + names.map { directory.appendingPathComponent($0).path })
        }, next: { try musickit(["next"]) }, stop: {
            _ = try? musickit(["daemon", "stop"])
            try? FileManager.default.removeItem(at: work)
        })]
        if let mpd {
            let server = try MPDServer(binary: mpd, device: pluginDevice, fixtures: fixtures, snapcastFIFO: snapcast.fifo)
            let connection = try server.connect()
            for output in [MPDServer.pulseOutput, MPDServer.alsaOutput] { connection.command("disableoutput \(output)") }
            connection.command("enableoutput \(MPDServer.fifoOutput)")
            let mpc = ["MPD_HOST": "127.0.0.1", "MPD_PORT": "\(server.port)"]
            subjects.append(Subject(name: "MPD fifo output", nextCommand: "`mpc next`", play: { names in
                let connection = try server.connect()
                connection.command("clear")
                for name in names { connection.command("add \"\(name)\"") }
                connection.command("play")
            }, next: { _ = try runTool("/usr/bin/mpc", ["next"], environment: mpc) }, stop: {
                _ = try? server.connect().command("stop")
                server.stop()
            }))
        }
        return subjects
    }
}
