import AudioEngine
import AudioTestSupport
import CEarlyRequest
import Foundation
import Glibc
import Synchronization
@testable import musickit
@testable import MusicKitCore
import XCTest

/// `musickit play`'s device library loaded, and its connection begun, at process start
/// (Sources/CEarlyRequest/EarlyLoad.c): the device it reads from the arguments is the one the
/// play command plays on, only a PulseAudio device's library is loaded, and the engine's first
/// stream is made on the connection.
final class EarlyLoadTests: XCTestCase {
    /// `body` called with `musickit ARGUMENTS` as a C program's argc and argv.
    private func withArgv<T>(_ arguments: [String], _ body: (Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> T) -> T {
        var storage = (["musickit"] + arguments).map { strdup($0) }
        defer { storage.forEach { free($0) } }
        return storage.withUnsafeMutableBufferPointer { argv in body(Int32(argv.count), argv.baseAddress) }
    }

    /// The device the process-start hook reads from `musickit play ARGUMENTS`.
    private func earlyDevice(_ arguments: [String]) -> String? {
        withArgv(["play"] + arguments) { musickit_early_play_device($0, $1).map { String(cString: $0) } }
    }

    /// What `musickit play` plays on, from the same arguments (PlayCommand.run's rule).
    private func playDevice(_ arguments: [String]) throws -> String {
        let parsed = try PlayCommand.spec.parse(arguments)
        return parsed.option("--device") ?? ApplicationMusicPlayer.defaultEngineConfiguration.deviceName
    }

    func testTheDeviceIsTheOneThePlayCommandPlaysOn() throws {
        let saved = getenv("MUSICKIT_AUDIO_DEVICE").map { String(cString: $0) }
        defer { if let saved { setenv("MUSICKIT_AUDIO_DEVICE", saved, 1) } else { unsetenv("MUSICKIT_AUDIO_DEVICE") } }
        let argumentLists: [[String]] = [
            ["song.flac"],
            ["--device", "pulseaudio", "song.flac"],
            ["--device=pulseaudio:speakers", "a.ogg", "b.ogg"],
            ["--repeat", "all", "--device", "hw:0", "song.flac"],
            ["--crossfade", "3", "--shuffle", "--device", "pulseaudio", "--no-ui", "gapless", "demo"],
            ["--device", "plughw:1", "--device", "pulseaudio", "song.flac"],
            ["--", "--device"],
        ]
        for configured in [nil, "pulseaudio:from-the-environment"] {
            if let configured { setenv("MUSICKIT_AUDIO_DEVICE", configured, 1) } else { unsetenv("MUSICKIT_AUDIO_DEVICE") }
            for arguments in argumentLists {
                XCTAssertEqual(earlyDevice(arguments), try playDevice(arguments),
                               "\(arguments), MUSICKIT_AUDIO_DEVICE=\(configured ?? "unset")")
            }
        }
    }

    /// Without a device named, a server's socket means the native output (falling back to ALSA's
    /// default if it does not answer), found the same way by the player's configuration and at
    /// process start (for the early load); no socket or no runtime folder means ALSA's default.
    func testTheServerIsFoundWhereThePlayerLooks() throws {
        let names = ["PULSE_SERVER", "PULSE_RUNTIME_PATH", "XDG_RUNTIME_DIR", "MUSICKIT_AUDIO_DEVICE"]
        let saved = names.map { getenv($0).map { String(cString: $0) } }
        defer {
            for (name, value) in zip(names, saved) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-server-\(UUID().uuidString)").path
        for folder in ["pulse-runtime", "xdg/pulse", "stale/pulse", "plain"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(atPath: root) }
        let listening = [try SystemPlayerWire.listen(at: root + "/pulse-runtime/native"),
                         try SystemPlayerWire.listen(at: root + "/xdg/pulse/native")]
        defer { listening.forEach { close($0) } }
        close(try SystemPlayerWire.listen(at: root + "/stale/pulse/native"))  // the file a server that died leaves

        FileManager.default.createFile(atPath: root + "/plain/native", contents: Data())  // not a socket
        let cases: [(server: String?, runtime: String?, xdg: String?, found: Bool)] = [
            ("tcp:somewhere", nil, nil, true),
            (nil, root + "/pulse-runtime", root + "/xdg", true),
            ("", nil, root + "/xdg", true),
            (nil, nil, root + "/stale", true),  // a socket, answering or not (the engine falls back then)
            (nil, root + "/xdg", root + "/xdg", false),  // PULSE_RUNTIME_PATH wins: no socket there
            (nil, root + "/plain", nil, false),
            (nil, nil, nil, false),
        ]
        unsetenv("MUSICKIT_AUDIO_DEVICE")
        for (server, runtime, xdg, found) in cases {
            for (name, value) in zip(names, [server, runtime, xdg]) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
            let label = "PULSE_SERVER=\(server ?? "unset") PULSE_RUNTIME_PATH=\(runtime ?? "unset") XDG_RUNTIME_DIR=\(xdg ?? "unset")"
            XCTAssertEqual(AudioEngineConfiguration.automaticDeviceName, found ? "pulseaudio" : "default", label)
            XCTAssertEqual(ApplicationMusicPlayer.defaultEngineConfiguration.fallbackDeviceName, found ? "default" : nil, label)
            XCTAssertEqual(musickit_early_pulse_server_found(), found ? 1 : 0, label)
            XCTAssertEqual(earlyDevice(["song.flac"]), try playDevice(["song.flac"]), label)
        }
    }

    /// Help, the daemon's play and other commands play nothing here: nothing is loaded for them.
    func testNothingIsLoadedWhenNothingPlaysHere() {
        for arguments in [["play", "--help"], ["play", "-h"], ["play", "--system", "song.flac"], ["play"],
                          ["next"], ["probe", "--device", "pulseaudio", "song.flac"], ["play", "--device"]] {
            XCTAssertNil(withArgv(arguments) { musickit_early_play_device($0, $1) }, "\(arguments)")
        }
    }

    /// The connection (and libpulse's load) begins at start for a PulseAudio device, not for an ALSA one.
    func testOnlyAPulseAudioDeviceBeginsTheConnectionAtStart() {
        func begins(_ arguments: [String]) -> Int32 { withArgv(arguments) { musickit_early_plays_on_pulseaudio($0, $1) } }
        XCTAssertEqual(begins(["play", "--device", "hw:0", "song.flac"]), 0)
        XCTAssertEqual(begins(["play", "--device", "default", "song.flac"]), 0)
        XCTAssertEqual(begins(["play", "--device", "pulseaudiox", "song.flac"]), 0)
        XCTAssertEqual(begins(["play", "--device", "pulseaudio:speakers", "song.flac"]), 1)
        XCTAssertEqual(begins(["play", "--device=pulseaudio", "song.flac"]), 1)
        XCTAssertEqual(begins(["play", "--system", "--device", "pulseaudio", "song.flac"]), 0)
    }

    /// The connection begun at process start is the one the engine's first PulseAudio stream is
    /// made on (taken once), and the stream plays.
    func testTheConnectionBegunAtStartCarriesTheFirstStream() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        guard let installed = dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL) else { throw XCTSkip("libpulse is not installed") }
        defer { dlclose(installed) }
        XCTAssertEqual(musickit_early_pulse_connect_start(), 1)
        XCTAssertEqual(musickit_early_pulse_connect_start(), 0, "one connection per process")
        // The thread that began it runs one job handed over (the play command's device warm-up).
        let caller = pthread_self()
        let ran = DispatchSemaphore(value: 0)
        let ranElsewhere = Mutex<Bool?>(nil)
        XCTAssertTrue(PlayCommand.runOnEarlyThread {
            ranElsewhere.withLock { $0 = pthread_equal(pthread_self(), caller) == 0 }
            ran.signal()
        })
        XCTAssertEqual(ran.wait(timeout: .now() + 5), .success, "the job ran")
        XCTAssertEqual(ranElsewhere.withLock { $0 }, true, "on the connection's thread")
        XCTAssertFalse(PlayCommand.runOnEarlyThread {}, "one job: the next caller runs its own")
        PlayCommand.adoptEarlyConnection()

        let directory = try makeTemporaryDirectory(self)
        let file = directory.appendingPathComponent("tone.wav")
        try writeAudioFile(file, TestSignal.tone(hz: 440, frames: 4_410, sampleRate: 44_100, channels: 2))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [file.path]))
        try engine.play()
        var mainloop: UnsafeMutableRawPointer?
        var context: UnsafeMutableRawPointer?
        XCTAssertEqual(musickit_early_pulse_connection_take(&mainloop, &context), 0, "the engine took it")
        XCTAssertEqual(engine.statistics.deviceName, device)
        recorder.waitForQueueFinished()
        engine.stop()
    }
}
