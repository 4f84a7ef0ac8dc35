import AudioEngine
import AudioMeasurement
import Foundation
import Glibc
import MusicKitCore

/// A catalog song whose preview is on the network: `scripts/http-file-server.py` serves an
/// AAC `.m4a` (made from the sweep by ffmpeg, its index first as previews have it) and answers
/// every request `latencyMilliseconds` late. `ApplicationMusicPlayer.play()` -> the preview's
/// first frame heard (it downloads while it plays); `mpv` on the same URL, in the same run.
/// Each run asks for another URL (`?run=N`), so nothing comes from a cache.
struct PreviewBenchmarks {
    let device: String
    let recorder: MonitorRecorder
    let fixtures: Fixtures
    let runs: Int
    let report: Report
    let landingFloor: Int
    let peers: PeerBenchmarks
    static let latencyMilliseconds = 50

    func run() throws {
        let root = fixtures.directory.appendingPathComponent("preview-bench")
        let served = root.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        let preview = served.appendingPathComponent("preview.m4a")
        try encodeWithFFmpeg(fixtures.sweep, to: preview, codec: "aac",
                                      arguments: ["-b:a", "256k", "-movflags", "+faststart", "-movie_timescale", "44100"])
        // What a start must be heard as: the AAC decoded (by the same FFmpeg), as 16-bit samples.
        let reference = pcm16(try Fixtures.decode(preview.path, seconds: 3))
        let server = try HTTPFileServer(folder: served, latencyMilliseconds: Self.latencyMilliseconds)
        defer { server.stop() }

        let environment = MusicKitEnvironment(root: root.appendingPathComponent("home"), applicationIdentifier: "musickit-bench")
        MusicKitEnvironment.current = environment
        try MusicAuthorizationSettings.set(.authorized, for: "musickit-bench")
        var configuration = AudioEngineConfiguration(deviceName: device)
        configuration.sampleFormats = [.int16]
        let player = ApplicationMusicPlayer(engineConfiguration: configuration)
        defer { player.stop() }

        var checks: [StartCheck] = []
        for run in 0..<runs {
            let song = try Self.song(preview: "http://127.0.0.1:\(server.port)/preview.m4a?run=\(run)")
            let queue = ApplicationMusicPlayer.Queue(for: [song])
            queue.affectsListeningHistory = false
            let since = monotonicNanoseconds()
            player.queue = queue
            let called = monotonicNanoseconds()
            Task { try await player.play() }
            checks.append(recorder.checkStart(since: since, call: called, track: reference, timeout: 3))
            player.stop()
            Thread.sleep(forTimeInterval: 0.25)
        }
        report.add(Row("remote preview TTFA, server \(Self.latencyMilliseconds) ms late: play() -> sound", starts: checks,
                       landingFloor: landingFloor,
                       note: "ApplicationMusicPlayer, AAC .m4a over HTTP, played while it downloads; goal: latency + 10 ms"))
        if let mpv = PeerBenchmarks.installed("mpv") {
            var run = 0
            let mpvChecks = peers.commandStarts(mpv, track: reference) {
                run += 1
                return ["--no-config", "--no-video", "--really-quiet", "--cache=no", "--ao=alsa", "--audio-device=alsa/\(peers.device)",
                        "http://127.0.0.1:\(server.port)/preview.m4a?mpv=\(run)"]
            }
            report.add(Row("mpv remote preview TTFA, same server: process start -> sound", starts: mpvChecks,
                           landingFloor: landingFloor, note: "same URL, the same sink through ALSA's pulse plugin; includes mpv's start-up"))
        }
    }

    /// A catalog song as the Apple Music API gives one, its preview at `preview`.
    private static func song(preview: String) throws -> Song {
        let json = """
            {"id":"1500000001","type":"songs","href":"/v1/catalog/us/songs/1500000001","attributes":{"name":"Remote Preview",
             "artistName":"Bench","durationInMillis":3000,"playParams":{"id":"1500000001","kind":"song"},
             "previews":[{"url":"\(preview)"}]}}
            """
        return try JSONDecoder().decode(Song.self, from: Data(json.utf8))
    }
}
