import AudioEngine
import AudioMeasurement
import Foundation
import Glibc
import MusicKitCore

/// The engine measured from outside: calls are timestamped with CLOCK_MONOTONIC and the
/// sound is found in the PulseAudio null sink's monitor recording.
struct EngineBenchmarks {
    let device: String
    /// How the rows name it: "engine" (ALSA's pulse plugin), "engine (native PulseAudio)".
    var name = "engine"  // a `var` so that the memberwise initializer takes it, with this default
    let recorder: MonitorRecorder
    let fixtures: Fixtures
    let runs: Int
    let report: Report
    /// Frames at the start of new audio the monitor cannot see, measured with a control.
    let landingFloor: Int

    private func configuration() -> AudioEngineConfiguration {
        var configuration = AudioEngineConfiguration(deviceName: device)
        configuration.sampleFormats = [.int16]
        // Another device buffer, to compare it with the engine's in the same build (usage).
        let environment = ProcessInfo.processInfo.environment
        if let milliseconds = environment["MUSICKIT_BENCH_BUFFER_MS"].flatMap(Int.init) {
            configuration.bufferDuration = .milliseconds(milliseconds)
        }
        if let microseconds = environment["MUSICKIT_BENCH_REFILL_US"].flatMap(Int.init) {
            configuration.refillDuration = .microseconds(microseconds)
        }
        return configuration
    }

    /// Waits until the sink has been quiet for a while, so the next run starts from silence.
    func settle() {
        Thread.sleep(forTimeInterval: 0.25)
    }

    /// Cold `play()`, and `play()` after `prepare()` and a wait long enough for any plugin
    /// that starts a stream by itself to have done so (which would be heard before the call).
    func timeToFirstAudio() {
        for prepared in [false, true] {
            var checks: [StartCheck] = []
            var timings: [AudioEngineStatistics.StartTimings] = []
            for _ in 0..<runs {
                let engine = AudioEngine(configuration: configuration())
                let since = monotonicNanoseconds()
                engine.setQueue(AudioEntryList(paths: [fixtures.sweep.path]))
                if prepared {
                    do { try engine.prepare() } catch { progress("prepare failed: \(error)"); continue }
                    Thread.sleep(forTimeInterval: 0.5)
                }
                let call = monotonicNanoseconds()
                do { try engine.play() } catch { progress("play failed: \(error)"); continue }
                checks.append(recorder.checkStart(since: since, call: call, track: fixtures.sweepSamples))
                timings.append(engine.statistics.startTimings)
                engine.stop()
                settle()
            }
            report.add(Row(prepared ? "\(name) TTFA after prepare(): play() -> sound" : "\(name) TTFA cold: play() -> sound",
                           starts: checks, landingFloor: landingFloor,
                           note: (prepared ? "API call in a running process; 0.5 s between prepare() and play()"
                               : "API call in a running process; opens the device") + "; " + Self.describe(timings)))
        }
    }

    func skipLatency() {
        var checks: [StartCheck] = []
        var timings: [AudioEngineStatistics.StartTimings] = []
        var sources = AudioEngineStatistics.SkipSources()
        for _ in 0..<runs {
            let engine = AudioEngine(configuration: configuration())
            engine.setQueue(AudioEntryList(paths: [fixtures.silence.path, fixtures.sweep.path]))
            do { try engine.play() } catch { progress("play failed: \(error)"); continue }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.8)  // playing silence; the next entry is prerolled
            let call = monotonicNanoseconds()
            engine.skipToNextEntry()
            checks.append(recorder.checkStart(since: since, call: call, track: fixtures.sweepSamples))
            let statistics = engine.statistics
            timings.append(statistics.startTimings)
            sources.add(statistics.skips)
            engine.stop()
            settle()
        }
        report.add(Row("\(name) skip: skipToNextEntry() -> next entry's sound", starts: checks, landingFloor: landingFloor,
                       note: sources.note + "; " + Self.describe(timings)))
    }

    /// A seek from the file's silent first 2 s to the sweep at 2 s, while playing.
    func seekLatency() {
        var checks: [StartCheck] = []
        var timings: [AudioEngineStatistics.StartTimings] = []
        for _ in 0..<runs {
            let engine = AudioEngine(configuration: configuration())
            engine.setQueue(AudioEntryList(paths: [fixtures.silenceThenSweep.path]))
            do { try engine.play() } catch { progress("play failed: \(error)"); continue }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.5)
            let call = monotonicNanoseconds()
            engine.seek(toFrame: Fixtures.silenceThenSweepSeekFrame)
            checks.append(recorder.checkStart(since: since, call: call, track: fixtures.silenceThenSweepSamples,
                                              expectedFrame: Fixtures.silenceThenSweepSeekFrame))
            timings.append(engine.statistics.startTimings)
            engine.stop()
            settle()
        }
        report.add(Row("\(name) seek: seek(toFrame:) -> sound at the target", starts: checks, landingFloor: landingFloor,
                       note: "from the silent first 2 s to the sweep at 2 s, while playing; " + Self.describe(timings)))
    }

    /// `setVolume(0.5)` while a sweep plays at full volume: how long until the last sample at the
    /// old level was heard (−18 dB: a quarter of the old peak is well above the new one). On the
    /// native stream it is the server's volume; through ALSA the engine rewrites its buffer.
    func volumeLatency() {
        var latencies: [Double] = []
        for _ in 0..<runs {
            let engine = AudioEngine(configuration: configuration())
            engine.setQueue(AudioEntryList(paths: [fixtures.longSweep.path]))
            do { try engine.play() } catch { progress("play failed: \(error)"); continue }
            Thread.sleep(forTimeInterval: 0.5)
            let full = recorder.chunks(arrivedAfter: monotonicNanoseconds() - 100_000_000)
                .flatMap(\.samples).map { abs(Int($0)) }.max() ?? 0
            let call = monotonicNanoseconds()
            engine.setVolume(0.5)
            Thread.sleep(forTimeInterval: 0.3)
            let after = recorder.chunks(arrivedAfter: call)
            engine.stop()
            settle()
            let loud = after.lastIndex { chunk in chunk.samples.contains { abs(Int($0)) > full / 4 } }
            let quietFrom = loud.map { $0 + 1 } ?? 0
            // Counted only when the level fell and stayed down (the rest of the 0.3 s quiet).
            guard full > 10_000, quietFrom < after.count, after.count - quietFrom > 50 else {
                progress("volume run not counted: peak \(full), \(after.count - quietFrom) quiet chunks of \(after.count)")
                continue
            }
            latencies.append(Double(after[quietFrom].arrivalNanoseconds - call) / 1e6)
        }
        report.add(Row("\(name) volume: setVolume(0.5) -> heard at the new level", unit: "ms", values: latencies,
                       note: device.hasPrefix("pulseaudio") ? "the stream's volume at the server"
                           : "the engine's gain; what the device held is written again"))
    }

    /// Where the audio thread's time went (medians, µs), from the engine's statistics.
    static func describe(_ timings: [AudioEngineStatistics.StartTimings]) -> String {
        func median(_ values: [UInt64]) -> String {
            format((Summary(values.map { Double($0) / 1_000 })?.median) ?? .nan)
        }
        return "audio thread (median µs): wake-up \(median(timings.map(\.commandWake))), "
            + "drop \(median(timings.map(\.drop))), prepare \(median(timings.map(\.prepare))), "
            + "write \(median(timings.map(\.write))), start \(median(timings.map(\.start)))"
    }

    /// Plays the gapless pair and measures inserted frames at the boundary in the monitor.
    func gaplessBoundary() {
        var gaps: [Double] = []
        var exact = 0
        for _ in 0..<runs {
            let engine = AudioEngine(configuration: configuration())
            engine.setQueue(AudioEntryList(paths: [fixtures.gaplessFirst.path, fixtures.gaplessSecond.path]))
            let start = monotonicNanoseconds()
            do { try engine.play() } catch { progress("play failed: \(error)"); continue }
            Thread.sleep(forTimeInterval: 1.3)
            engine.stop()
            let recorded = recorder.samples(after: start)
            if let measurement = GapMeasurement.measure(recorded: recorded, signal: fixtures.gaplessSignal,
                                                        cut: Fixtures.gaplessCut) {
                gaps.append(Double(measurement.insertedFrames))
                if measurement.bitExact { exact += 1 }
            }
            settle()
        }
        report.add(Row("engine gap at a track boundary", unit: "frames", values: gaps,
                       note: "bit-exact across the boundary in \(exact) of \(gaps.count) runs"))
    }

    /// CPU time the audio thread spends per second of audio (10 s of music).
    func audioThreadCPU() {
        let engine = AudioEngine(configuration: configuration())
        engine.setQueue(AudioEntryList(paths: [fixtures.music.path]))
        do { try engine.play() } catch { progress("play failed: \(error)"); return }
        Thread.sleep(forTimeInterval: 0.5)
        let thread = ThreadCPU.find(named: "musickit-audio")
        let cpuStart = thread.flatMap(ThreadCPU.nanoseconds)
        let positionStart = engine.position.seconds
        Thread.sleep(forTimeInterval: 10)
        let cpuEnd = thread.flatMap(ThreadCPU.nanoseconds)
        let audioSeconds = engine.position.seconds - positionStart
        engine.stop()
        settle()
        if let cpuStart, let cpuEnd, audioSeconds > 0 {
            report.add(Row("engine audio thread CPU per second of audio", unit: "ms/s",
                           values: [Double(cpuEnd - cpuStart) / 1e6 / audioSeconds],
                           note: "\(format(audioSeconds)) s of audio, from /proc schedstat"))
        }
    }

    /// What loads the machine while `underLoad` plays.
    enum Load {
        /// `stress-ng --cpu 2 --io 1` (or, without stress-ng, a busy loop per core).
        case stress
        /// Clean debug builds of the package at this folder, one after another, in a scratch
        /// folder of their own: what a user who compiles beside the player does to it
        /// (issue #41 asks for 0 xruns there).
        case debugBuild(package: URL)
    }

    /// 60 s of a continuous sweep while `load` loads the machine: the engine's underruns and
    /// xruns, and the monitor compared with the file frame by frame (a dropout or an inserted
    /// silence shows).
    func underLoad(_ loadKind: Load = .stress) {
        if case .debugBuild(let package) = loadKind {
            guard let swift = DebugBuildLoop.swiftOnPath() else {
                progress("swift is not on PATH: the debug-build load is not measured")
                return
            }
            guard let builds = DebugBuildLoop.start(swift: swift, package: package) else { return }
            defer { builds.stop() }
            // The first seconds resolve the package and plan the build; by then it compiles.
            Thread.sleep(forTimeInterval: 5)
            play60Seconds(load: "clean debug builds of this package (swift build, \(ProcessInfo.processInfo.activeProcessorCount) cores)",
                          rowLoad: "beside a debug build")
            return
        }
        var hogs: [Process] = []
        let load: String
        if let stress = PeerBenchmarks.installed("stress-ng") {
            let hog = Process()
            hog.executableURL = stress
            hog.arguments = ["--cpu", "2", "--io", "1", "--timeout", "75s", "--quiet"]
            hog.standardOutput = FileHandle.nullDevice
            hog.standardError = FileHandle.nullDevice
            try? hog.run()
            hogs.append(hog)
            load = "stress-ng --cpu 2 --io 1"
        } else {
            for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
                let hog = Process()
                hog.executableURL = URL(fileURLWithPath: "/bin/sh")
                hog.arguments = ["-c", "while :; do :; done"]
                try? hog.run()
                hogs.append(hog)
            }
            load = "\(hogs.count) busy shell loops (stress-ng not installed)"
        }
        defer { for hog in hogs { hog.terminate(); hog.waitUntilExit() } }
        Thread.sleep(forTimeInterval: 1)
        play60Seconds(load: load, rowLoad: "under load")
    }

    /// Plays the 60 s sweep from a cold start and adds the row: underruns, xruns, and the
    /// monitor against the file.
    private func play60Seconds(load: String, rowLoad: String) {
        let configuration = configuration()
        let probe = SchedulingLatencyProbe(realtimePriority: configuration.realtimePriority)
        let engine = AudioEngine(configuration: configuration)
        engine.setQueue(AudioEntryList(paths: [fixtures.longSweep.path]))
        let call = monotonicNanoseconds()
        do { try engine.play() } catch { progress("play failed: \(error)"); return }
        let frames = fixtures.longSweepSamples.count / 2
        let check = recorder.checkStart(since: call, call: call, track: fixtures.longSweepSamples,
                                        compareFrames: frames - landingFloor - 4_096, timeout: 5)
        let statistics = engine.statistics
        let stalls = probe.stop()
        engine.stop()
        settle()
        let buffer = statistics.device.map { "buffer \(format(Double($0.bufferSizeInFrames) * 1_000 / Double($0.sampleRate))) ms, " } ?? ""
        report.add(Row("\(name) underruns + xruns, 60 s \(rowLoad)", unit: "count",
                       values: [Double(statistics.underruns + statistics.xruns)],
                       note: "\(load); underruns \(statistics.underruns), xruns \(statistics.xruns), \(buffer)realtime thread: "
                           + "\(statistics.isRealtime); at the monitor: \(check.mismatchedFrames) of \(check.comparedFrames) "
                           + "frames differ from the file (landing +\(check.landingFrame.map(String.init) ?? "?")"
                           + (check.firstDifferenceDescription.map { "; \($0)" } ?? "") + "); "
                           + SchedulingLatencyProbe.describe(stalls)))
    }
}

/// Clean debug builds of a package, one after another, in a session of their own so that
/// stopping them reaches the compilers SwiftPM starts (each in a process group of its own).
struct DebugBuildLoop {
    let shell: pid_t
    let scratch: URL

    /// The `swift` the user builds with: the first on `PATH` (a toolchain is often in /opt).
    static func swiftOnPath() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("swift") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func start(swift: URL, package: URL) -> DebugBuildLoop? {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-bench-build-\(getpid())")
        let script = #"trap 'exit 0' INT TERM; while :; do rm -rf "$1"; "$2" build --package-path "$3" --scratch-path "$1"; done"#
        switch spawnProcess(["/bin/sh", "-c", script, "sh", scratch.path, swift.path, package.path],
                            environment: ProcessInfo.processInfo.environment, outputPath: "/dev/null", newSession: true) {
        case .success(let shell): return DebugBuildLoop(shell: shell, scratch: scratch)
        case .failure(let error):
            progress("the debug-build load did not start: \(error)")
            return nil
        }
    }

    /// Interrupts the build (SwiftPM stops its compilers on SIGINT), waits up to 10 s for the
    /// loop to end, kills whatever of the session is left, reaps the loop's shell, and removes
    /// the scratch folder.
    func stop() {
        kill(-shell, SIGINT)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(shell, &status, WNOHANG) == 0 { usleep(100_000) }
        for process in sessionMembers() { kill(process, SIGKILL) }
        // Returns at once when the shell was reaped above; else it was just killed with the rest.
        _ = waitpid(shell, &status, 0)
        try? FileManager.default.removeItem(at: scratch)
    }

    /// The processes whose session is the loop's (field 6 of /proc/PID/stat).
    private func sessionMembers() -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(pid_t.init).filter { process in
            guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return fields.count > 3 && pid_t(fields[3]) == shell
        }
    }
}

extension AudioEngineStatistics.SkipSources {
    mutating func add(_ other: Self) {
        deviceBuffer += other.deviceBuffer
        ring += other.ring
        preroll += other.preroll
        decoder += other.decoder
    }

    /// Where the skips' next entries came from, for a row's note.
    var note: String {
        "next entry from: preroll \(preroll), ring \(ring), device buffer \(deviceBuffer), decoder \(decoder)"
    }
}

/// Finds where a known signal's two halves sit in a monitor recording.
enum GapMeasurement {
    struct Result {
        /// Frames between the end of the first part and the start of the second beyond none.
        let insertedFrames: Int
        /// Whether the recording holds the signal unchanged from before to after the cut.
        let bitExact: Bool
    }

    /// Locates a 64-frame snippet from ~0.1 s before the cut and one from ~0.1 s after it
    /// (bit-exact search); the distance between them, minus the distance in the signal, is
    /// what the player inserted (or dropped, if negative).
    static func measure(recorded: [Int16], signal: [Int16], cut: Int) -> Result? {
        let before = cut - 4_410
        let after = cut + 4_410
        guard let first = find(signal[(before * 2)..<((before + 64) * 2)], in: recorded),
              let second = find(signal[(after * 2)..<((after + 64) * 2)], in: recorded, from: first) else { return nil }
        let inserted = (second - first) - (after - before)
        var exact = inserted == 0
        if exact {
            let recordedSpan = recorded[(first * 2)..<((first + after - before + 64) * 2)]
            let signalSpan = signal[(before * 2)..<((after + 64) * 2)]
            exact = Array(recordedSpan) == Array(signalSpan)
        }
        return Result(insertedFrames: inserted, bitExact: exact)
    }

    private static func find(_ needle: ArraySlice<Int16>, in haystack: [Int16], from startFrame: Int = 0) -> Int? {
        let pattern = Array(needle)
        guard let firstSample = pattern.first, haystack.count >= pattern.count else { return nil }
        var frame = startFrame
        while (frame * 2) + pattern.count <= haystack.count {
            if haystack[frame * 2] == firstSample && Array(haystack[(frame * 2)..<(frame * 2 + pattern.count)]) == pattern {
                return frame
            }
            frame += 1
        }
        return nil
    }
}

/// CPU time of one of this process's threads, from /proc.
enum ThreadCPU {
    static func find(named name: String) -> Int? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == name { return Int(task) }
        }
        return nil
    }

    /// Nanoseconds the thread has run (first field of schedstat).
    static func nanoseconds(_ thread: Int) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(thread)/schedstat", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { UInt64($0) }
    }
}
