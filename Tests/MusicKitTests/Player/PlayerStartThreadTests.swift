import AudioEngine
import AudioTestSupport
import Foundation
import PlatformSupport
@testable import MusicKitCore
import XCTest

/// Where a start's blocking part runs (issue #43): `play()` and `prepareToPlay()` open the
/// device and the first entry, which can wait on a sound server for long. From a task they do
/// that on a thread of their own, so that the concurrency pool's few threads go on; from
/// `waitFor` (the CLI, musickitd) on the thread that waits anyway.
final class PlayerStartThreadTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
        try authorizeTestApp()
        directory = try makeTemporaryDirectory(self)
    }

    /// The names of this process's threads (`/proc/self/task/*/comm`).
    private func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// A player whose device is the native output on a PulseAudio "server" that accepts and
    /// never answers, with a song queued.
    private func stuckPlayer(_ server: SilentUnixServer) throws -> ApplicationMusicPlayer {
        let previous = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        setenv("PULSE_SERVER", "unix:\(server.path)", 1)
        addTeardownBlock { if let previous { setenv("PULSE_SERVER", previous, 1) } else { unsetenv("PULSE_SERVER") } }
        var configuration = AudioEngineConfiguration()
        configuration.deviceName = "pulseaudio"
        let player = ApplicationMusicPlayer(engineConfiguration: configuration)
        addTeardownBlock { player.stop() }
        let (songs, _) = try GeneratedSongs.tones([440], frames: 44_100, into: directory)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        return player
    }

    func testPlayFromATaskOpensTheDeviceOnAThreadOfItsOwnAndStopEndsIt() async throws {
        let server = try SilentUnixServer(path: directory.appendingPathComponent("silent-pulse").path)
        defer { server.close() }
        let player = try stuckPlayer(server)
        let play = Task { try await player.play() }
        await eventually("the start reached the silent server") { server.connectionCount > 0 }
        XCTAssertTrue(threadNames().contains("musickit.start"), "the device is opened on the start's own thread: \(threadNames())")
        player.stop()
        do {
            try await play.value
            XCTFail("a stopped start throws")
        } catch is CancellationError {}
        await eventually("the start's thread ended") { !self.threadNames().contains("musickit.start") }
    }

    func testPlayThroughWaitForOpensTheDeviceOnTheWaitingThread() throws {
        let server = try SilentUnixServer(path: directory.appendingPathComponent("silent-pulse").path)
        defer { server.close() }
        let player = try stuckPlayer(server)
        let stopper = Thread {
            _ = server.waitForConnection(timeout: 10)
            usleep(100_000)
            player.stop()
        }
        stopper.start()
        XCTAssertThrowsError(try waitFor { try await player.play() }) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        XCTAssertTrue(server.connectionCount > 0, "the start reached the silent server")
    }
}
