import PlatformSupport
import AudioEngine
import AudioMeasurement
import Foundation
import CLinux
import Glibc
import MusicKitCore
import Synchronization

/// `ApplicationMusicPlayer` measured like the engine (same sink, same recorder, same run), so
/// what the player adds shows as a difference of medians; and a 100,000-track playlist queue:
/// the time to start it and the memory it takes against a 1,000-track one.
struct PlayerBenchmarks {
    let device: String
    let recorder: MonitorRecorder
    let fixtures: Fixtures
    let runs: Int
    let report: Report
    let landingFloor: Int
    static let longPlaylistTracks = 100_000
    static let shortPlaylistTracks = 1_000

    private func configuration() -> AudioEngineConfiguration {
        var configuration = AudioEngineConfiguration(deviceName: device)
        configuration.sampleFormats = [.int16]
        return configuration
    }

    private func settle() { Thread.sleep(forTimeInterval: 0.25) }

    /// The start `action` makes checked at the monitor: the sweep from `expectedFrame` of
    /// `track`; then the engine's statistics are read, playback stops and the sink goes quiet.
    ///
    /// The call is timed inside the task, just before the player is called, as an app calls
    /// the async API from its own async code: the hop from this benchmark's plain thread into
    /// a new task (0.1–0.3 ms here) is the benchmark's, not the API's. Nothing may be heard
    /// before that moment either.
    private func checkStart(_ player: ApplicationMusicPlayer, since: UInt64, track: [Int16]? = nil, expectedFrame: Int = 0,
                            _ action: @escaping @Sendable (ApplicationMusicPlayer) async throws -> Void)
        -> (check: StartCheck, statistics: AudioEngineStatistics) {
        let called = CallTime()
        Task {
            called.mark()
            try await action(player)
        }
        let call = called.wait()
        let check = recorder.checkStart(since: since, call: call, track: track ?? fixtures.sweepSamples,
                                        expectedFrame: expectedFrame)
        let statistics = player.engineStatistics
        player.stop()
        settle()
        return (check, statistics)
    }

    /// A queue of `songs` kept out of the listening history.
    private static func queue(_ items: [Song]) -> ApplicationMusicPlayer.Queue {
        let queue = ApplicationMusicPlayer.Queue(for: items)
        queue.affectsListeningHistory = false
        return queue
    }

    /// A MusicKit environment of its own: a catalog with two generated playlists whose songs
    /// play the sweep, an authorized app, a subscribed account.
    private func makeEnvironment(root: URL) throws -> MusicKitEnvironment {
        let catalog = root.appendingPathComponent("assets/Catalog/us")
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        var text = "{\"storefront\":\"us\",\"data\":["
        let tracks = Self.longPlaylistTracks
        for index in 0..<tracks {
            let id = 300_000_000 + index
            text += "{\"id\":\"\(id)\",\"type\":\"songs\",\"attributes\":{\"name\":\"Track \(index)\",\"artistName\":\"Bench\","
                + "\"durationInMillis\":3000,\"playParams\":{\"id\":\"\(id)\",\"kind\":\"song\"},"
                + "\"previews\":[{\"url\":\"\(fixtures.sweep.absoluteString)\"}]}},"
        }
        for (name, count) in [("long", tracks), ("short", Self.shortPlaylistTracks)] {
            let ids = (0..<count).map { "{\"id\":\"\(300_000_000 + $0)\",\"type\":\"songs\"}" }.joined(separator: ",")
            text += "{\"id\":\"pl.bench-\(name)\",\"type\":\"playlists\",\"attributes\":{\"name\":\"Bench \(name)\","
                + "\"playParams\":{\"id\":\"pl.bench-\(name)\",\"kind\":\"playlist\"}},"
                + "\"relationships\":{\"tracks\":{\"data\":[\(ids)]}}},"
        }
        text.removeLast()
        text += "]}"
        try Data(text.utf8).write(to: catalog.appendingPathComponent("bench.json"))
        let environment = MusicKitEnvironment(root: root.appendingPathComponent("home"),
                                              assetsDirectory: root.appendingPathComponent("assets"),
                                              applicationIdentifier: "musickit-bench")
        MusicKitEnvironment.current = environment
        _ = try MusicCatalogIndex.prepare(environment: environment)
        try MusicAuthorizationSettings.set(.authorized, for: "musickit-bench")
        return environment
    }

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-player-bench-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        progress("player: catalog with a \(Self.longPlaylistTracks)-track playlist")
        _ = try makeEnvironment(root: root)
        let player = ApplicationMusicPlayer(engineConfiguration: configuration())
        timeToFirstAudio(player)
        skipLatency(player)
        seekLatency(player)
        resumeAfterRelease()
        try longPlaylist(player)
        player.stop()
    }

    private func timeToFirstAudio(_ player: ApplicationMusicPlayer) {
        let song = Song(fileURL: fixtures.sweep)
        for prepared in [false, true] {
            var checks: [StartCheck] = []
            for _ in 0..<runs {
                let since = monotonicNanoseconds()
                player.queue = Self.queue([song])
                if prepared {
                    do { try waitFor { try await player.prepareToPlay() } } catch { progress("prepare failed: \(error)"); continue }
                    Thread.sleep(forTimeInterval: 0.5)
                }
                checks.append(checkStart(player, since: since) { try await $0.play() }.check)
            }
            report.add(Row(prepared ? "player TTFA after prepareToPlay(): play() -> sound" : "player TTFA cold: play() -> sound",
                           starts: checks, landingFloor: landingFloor, note: "ApplicationMusicPlayer, a library song"))
        }
    }

    private func skipLatency(_ player: ApplicationMusicPlayer) {
        var checks: [StartCheck] = []
        var sources = AudioEngineStatistics.SkipSources()
        for _ in 0..<runs {
            player.queue = Self.queue([Song(fileURL: fixtures.silence), Song(fileURL: fixtures.sweep)])
            do { try waitFor { try await player.play() } } catch { progress("play failed: \(error)"); continue }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.8)  // playing silence; the next entry is prerolled
            let (check, statistics) = checkStart(player, since: since) { try await $0.skipToNextEntry() }
            checks.append(check)
            sources.add(statistics.skips)
        }
        report.add(Row("player skip: skipToNextEntry() -> next entry's sound", starts: checks, landingFloor: landingFloor,
                       note: "ApplicationMusicPlayer, library songs; " + sources.note))
    }

    private func seekLatency(_ player: ApplicationMusicPlayer) {
        var checks: [StartCheck] = []
        let seconds = Double(Fixtures.silenceThenSweepSeekFrame) / 44_100
        for _ in 0..<runs {
            player.queue = Self.queue([Song(fileURL: fixtures.silenceThenSweep)])
            do { try waitFor { try await player.play() } } catch { progress("play failed: \(error)"); continue }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.5)
            checks.append(checkStart(player, since: since, track: fixtures.silenceThenSweepSamples,
                                     expectedFrame: Fixtures.silenceThenSweepSeekFrame) { $0.playbackTime = seconds }.check)
        }
        report.add(Row("player seek: playbackTime = 2 -> sound at the target", starts: checks, landingFloor: landingFloor,
                       note: "ApplicationMusicPlayer, from the silent first 2 s to the sweep"))
    }

    /// A play() after the stream was released for a long pause (`releaseWhenPausedAfter`, here
    /// 200 ms): a cold start at the paused time, heard from the frame it was paused at.
    private func resumeAfterRelease() {
        var configuration = configuration()
        configuration.releaseWhenPausedAfter = .milliseconds(200)
        let player = ApplicationMusicPlayer(engineConfiguration: configuration)
        defer { player.stop() }
        var checks: [StartCheck] = []
        for _ in 0..<runs {
            player.queue = Self.queue([Song(fileURL: fixtures.silenceThenSweep)])
            player.playbackTime = Double(Fixtures.silenceThenSweepSeekFrame) / 44_100
            do { try waitFor { try await player.play() } } catch { progress("play failed: \(error)"); continue }
            Thread.sleep(forTimeInterval: 0.3)  // into the sweep
            player.pause()
            let pausedFrame = Int((player.playbackTime * 44_100).rounded())
            let deadline = Date(timeIntervalSinceNow: 5)
            while player.engineStatistics.device != nil && Date() < deadline { usleep(5_000) }
            guard player.engineStatistics.device == nil else { progress("the paused stream was not released"); continue }
            let since = monotonicNanoseconds()
            settle()
            checks.append(checkStart(player, since: since, track: fixtures.silenceThenSweepSamples,
                                     expectedFrame: pausedFrame) { try await $0.play() }.check)
        }
        report.add(Row("player play() after a long pause released the stream -> sound where paused", starts: checks,
                       landingFloor: landingFloor, note: "ApplicationMusicPlayer, released after 200 ms here (30 s by default): a cold start"))
    }

    /// Bytes malloc has handed out and not taken back (all threads).
    private static func heapBytes() -> Int { Int(mallinfo2().uordblks) }

    private func playlist(_ id: String) throws -> Playlist {
        let items = try waitFor { try await MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: MusicItemID(id)).response().items }
        guard let playlist = items.first else { throw CocoaError(.fileNoSuchFile) }
        return playlist
    }

    private func longPlaylist(_ player: ApplicationMusicPlayer) throws {
        let long = try playlist("pl.bench-long")
        let short = try playlist("pl.bench-short")

        // The queue alone: time to make it with its first entry, and the heap it holds.
        var startTimes: [Double] = []
        var longBytes: [Double] = []
        var shortBytes: [Double] = []
        for _ in 0..<runs {
            for (playlist, bytes) in [(short, 0), (long, 1)] {
                let before = Self.heapBytes()
                let start = monotonicNanoseconds()
                let queue: ApplicationMusicPlayer.Queue = [playlist]
                let title = queue.currentEntry?.title
                let elapsed = milliseconds(from: start, to: monotonicNanoseconds())
                let held = Double(Self.heapBytes() - before) / 1024
                precondition(title == "Track 0" && queue.entries.count == (bytes == 1 ? Self.longPlaylistTracks : Self.shortPlaylistTracks))
                if bytes == 1 { startTimes.append(elapsed); longBytes.append(held) } else { shortBytes.append(held) }
                withExtendedLifetime(queue) {}
            }
        }
        report.add(Row("100,000-track playlist: queue [playlist] made, its current entry read", unit: "ms",
                       values: startTimes, note: "count from the index, one page of 64 tracks loaded"))
        report.add(Row("heap held by a 100,000-track playlist queue", unit: "KiB", values: longBytes,
                       note: "1,000-track queue: median \(format(Summary(shortBytes)?.median ?? .nan)) KiB"))

        // Playing it: queue made and set, play() -> sound.
        var checks: [StartCheck] = []
        for _ in 0..<runs {
            checks.append(checkStart(player, since: monotonicNanoseconds()) { player in
                let queue: ApplicationMusicPlayer.Queue = [long]
                queue.affectsListeningHistory = false
                player.queue = queue
                try await player.play()
            }.check)
        }
        report.add(Row("100,000-track playlist: queue made and set, play() -> sound", starts: checks,
                       landingFloor: landingFloor, note: "catalog songs (subscription checked), cold device"))
    }
}

/// When a task made its call (CLOCK_MONOTONIC), read from the thread that started the task.
final class CallTime: Sendable {
    private let nanoseconds = Atomic<UInt64>(0)

    func mark() { nanoseconds.store(monotonicNanoseconds(), ordering: .releasing) }

    /// Waits (sleeping 20 µs at a time, so the task gets a core) until `mark()` ran.
    func wait() -> UInt64 {
        while true {
            let value = nanoseconds.load(ordering: .acquiring)
            if value != 0 { return value }
            usleep(20)
        }
    }
}
