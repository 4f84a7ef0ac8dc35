import PlatformSupport
import AudioEngine
import AudioMeasurement
import Foundation
import Glibc
import MusicKitCore
import Synchronization

/// The system player through its daemon, measured like the in-process player (same sink, same
/// recorder, same run): `SystemMusicPlayer` calls, the `musickit next` command, and MPD's own
/// client `mpc` against musickitd's MPD socket.
struct SystemPlayerBenchmarks {
    let device: String
    let recorder: MonitorRecorder
    let fixtures: Fixtures
    let runs: Int
    let report: Report
    let landingFloor: Int
    let musickit: URL

    private func settle() { Thread.sleep(forTimeInterval: 0.25) }

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-system-bench-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let environment = MusicKitEnvironment(root: root, applicationIdentifier: "musickit-bench")
        MusicKitEnvironment.current = environment
        // The daemon's device; the variable is put back after, for the groups that follow (the
        // command line's row without a device).
        let previousDevice = ProcessInfo.processInfo.environment["MUSICKIT_AUDIO_DEVICE"]
        setenv("MUSICKIT_AUDIO_DEVICE", device, 1)
        defer {
            if let previousDevice { setenv("MUSICKIT_AUDIO_DEVICE", previousDevice, 1) } else { unsetenv("MUSICKIT_AUDIO_DEVICE") }
        }
        // The daemon built beside the command-line tool (scripts/build), unless MUSICKITD says.
        if ProcessInfo.processInfo.environment["MUSICKITD"] == nil {
            setenv("MUSICKITD", musickit.deletingLastPathComponent().appendingPathComponent("musickitd").path, 1)
        }
        let player = SystemMusicPlayer(environment: environment)
        progress("system: musickitd \(try player.daemonProcessID())")
        defer { try? player.stopDaemon() }
        let sweep = Song(fileURL: fixtures.sweep)
        let silence = Song(fileURL: fixtures.silence)
        let commandEnvironment = ProcessInfo.processInfo.environment.merging([
            "MUSICKIT_CONFIG_DIR": environment.configDirectory.path, "MUSICKIT_DATA_DIR": environment.dataDirectory.path,
            "MUSICKIT_RUNTIME_DIR": environment.runtimeDirectory.path,
            "MPD_HOST": environment.runtimeDirectory.appendingPathComponent("mpd.sock").path]) { $1 }

        // Prepared play() through the daemon.
        var prepared: [StartCheck] = []
        for _ in 0..<runs {
            let since = monotonicNanoseconds()
            player.queue = MusicPlayer.Queue(for: [sweep])
            do { try waitFor { try await player.prepareToPlay() } } catch { progress("prepare failed: \(error)"); continue }
            Thread.sleep(forTimeInterval: 0.5)
            prepared.append(check(since: since) { try await player.play() })
            player.stop()
            try? player.synchronize()
            settle()
        }
        report.add(Row("system player TTFA after prepareToPlay(): play() -> sound", starts: prepared, landingFloor: landingFloor,
                       note: "SystemMusicPlayer -> musickitd, a library song"))

        // A new queue while another plays (silence, so that nothing is heard before the call):
        // the queue replaced and played at once, as `musickit play --system FILE` does.
        let replaced = whilePlaying([silence], for: 0.5, player: player, "new queue") { since in
            check(since: since) {
                player.queue = MusicPlayer.Queue(for: [sweep])
                try await player.play()
            }
        }
        report.add(Row("system player new queue while playing: queue = [song]; play() -> sound", starts: replaced,
                       landingFloor: landingFloor, note: "SystemMusicPlayer -> musickitd, replacing a playing queue"))

        // Skips: the API, the command, mpc.
        func skips(_ name: String, note: String, _ skip: () throws -> UInt64) {
            // Playing silence for 0.8 s: the next entry is prerolled.
            let checks = whilePlaying([silence, sweep], for: 0.8, player: player, name) { since in
                recorder.checkStart(since: since, call: try skip(), track: fixtures.sweepSamples, timeout: 3)
            }
            report.add(Row(name, starts: checks, landingFloor: landingFloor, note: note))
        }
        skips("system player skip: skipToNextEntry() -> next entry's sound", note: "SystemMusicPlayer -> musickitd") {
            let called = CallTime()
            Task { called.mark(); try await player.skipToNextEntry() }
            return called.wait()
        }
        skips("musickit next (CLI) -> next entry's sound", note: "process start -> sound; musickitd running") {
            try Self.startProcess(musickit, ["next"], environment: commandEnvironment)
        }
        // What sending the request from a C constructor saves (Sources/CEarlyRequest): the same
        // command with the request sent from Swift's main instead.
        skips("musickit next, request sent from main -> next entry's sound",
              note: "MUSICKIT_NO_EARLY_REQUEST=1: after the Swift runtime's start") {
            try Self.startProcess(musickit, ["next"], environment: commandEnvironment.merging(["MUSICKIT_NO_EARLY_REQUEST": "1"]) { $1 })
        }
        if let mpc = PeerBenchmarks.installed("mpc") {
            skips("musickitd via `mpc next` -> next entry's sound", note: "process start -> sound; MPD protocol on mpd.sock") {
                try Self.startProcess(mpc, ["-q", "next"], environment: commandEnvironment)
            }
            var plays: [StartCheck] = []
            for _ in 0..<runs {
                player.queue = MusicPlayer.Queue(for: [sweep])
                try? player.synchronize()
                settle()
                do {
                    let call = try Self.startProcess(mpc, ["-q", "play"], environment: commandEnvironment)
                    plays.append(recorder.checkStart(since: call - 200_000_000, call: call, track: fixtures.sweepSamples, timeout: 3))
                } catch {
                    progress("mpc play: \(error)")
                }
                player.stop()
                try? player.synchronize()
                settle()
            }
            report.add(Row("musickitd TTFA via `mpc play` -> sound", starts: plays, landingFloor: landingFloor,
                           note: "includes mpc start-up; queue set, stopped"))
            // What a person types to hear something else: three mpc processes, timed from the first.
            let newQueues = whilePlaying([silence], for: 0.5, player: player, "mpc clear; add; play") { _ in
                let call = try Self.runProcess(mpc, ["-q", "clear"], environment: commandEnvironment)
                _ = try Self.runProcess(mpc, ["-q", "add", fixtures.sweep.path], environment: commandEnvironment)
                _ = try Self.startProcess(mpc, ["-q", "play"], environment: commandEnvironment)
                return recorder.checkStart(since: call, call: call, track: fixtures.sweepSamples, timeout: 4)
            }
            report.add(Row("musickitd new queue while playing: `mpc clear; mpc add F; mpc play` -> sound", starts: newQueues,
                           landingFloor: landingFloor, note: "three mpc processes, timed from the first's start"))
        }
    }

    /// `runs` times: `queue` played for `seconds` (silence first, so that nothing is heard before
    /// the call), then `measure(since)` with `since` the time before the wait; stopped after each.
    private func whilePlaying(_ queue: [Song], for seconds: Double, player: SystemMusicPlayer, _ name: String,
                              _ measure: (UInt64) throws -> StartCheck) -> [StartCheck] {
        var checks: [StartCheck] = []
        for _ in 0..<runs {
            player.queue = MusicPlayer.Queue(for: queue)
            do { try waitFor { try await player.play() } } catch { progress("play failed: \(error)"); continue }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: seconds)
            do { checks.append(try measure(since)) } catch { progress("\(name): \(error)") }
            player.stop()
            try? player.synchronize()
            settle()
        }
        return checks
    }

    /// `action` called on a new task, timed just before the call (as PlayerBenchmarks does).
    private func check(since: UInt64, _ action: @escaping @Sendable () async throws -> Void) -> StartCheck {
        let called = CallTime()
        Task { called.mark(); try await action() }
        return recorder.checkStart(since: since, call: called.wait(), track: fixtures.sweepSamples)
    }

    /// Runs a process to its end; returns the time it was started.
    /// posix_spawn and waitpid: Foundation's `waitUntilExit` polls its run loop and returned
    /// ~50 ms after the process had ended (the `mpc clear; add; play` row measured 108 ms so).
    private static func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> UInt64 {
        let start = monotonicNanoseconds()
        let process = try spawnProcess([executable.path] + arguments, environment: environment, outputPath: "/dev/null",
                                       newSession: false).get()
        var status: Int32 = 0
        while waitpid(process, &status, 0) < 0 && errno == EINTR {}
        return start
    }

    /// Starts a process (not waited for here: its sound is); returns the time it was started.
    private static func startProcess(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> UInt64 {
        let process = Process.quiet(executable, arguments, environment: environment)
        let start = monotonicNanoseconds()
        try process.run()
        DispatchQueue.global().async { process.waitUntilExit() }
        return start
    }
}
