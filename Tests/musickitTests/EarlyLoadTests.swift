import AudioEngine
import CEarlyRequest
import Foundation
import Glibc
@testable import musickit
@testable import MusicKit
import XCTest

/// `musickit play`'s device library loaded at process start (Sources/CEarlyRequest/EarlyLoad.c):
/// the device it reads from the arguments is the one the play command plays on, and only a
/// PulseAudio device's library is loaded.
final class EarlyLoadTests: XCTestCase {
    private func earlyDevice(_ arguments: [String]) -> String? {
        var storage = (["musickit", "play"] + arguments).map { strdup($0) }
        defer { storage.forEach { free($0) } }
        return storage.withUnsafeMutableBufferPointer { argv in
            musickit_early_play_device(Int32(argv.count), argv.baseAddress).map { String(cString: $0) }
        }
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

    /// Help, the daemon's play and other commands play nothing here: nothing is loaded for them.
    func testNothingIsLoadedWhenNothingPlaysHere() {
        for arguments in [["play", "--help"], ["play", "-h"], ["play", "--system", "song.flac"], ["play"],
                          ["next"], ["probe", "--device", "pulseaudio", "song.flac"], ["play", "--device"]] {
            var storage = (["musickit"] + arguments).map { strdup($0) }
            defer { storage.forEach { free($0) } }
            let device = storage.withUnsafeMutableBufferPointer { argv in
                musickit_early_play_device(Int32(argv.count), argv.baseAddress)
            }
            XCTAssertNil(device, "\(arguments)")
        }
    }

    /// libpulse for a PulseAudio device (when installed), nothing for an ALSA device.
    func testOnlyAPulseAudioDeviceLoadsItsLibrary() throws {
        func start(_ arguments: [String]) -> Int32 {
            var storage = (["musickit"] + arguments).map { strdup($0) }
            defer { storage.forEach { free($0) } }
            return storage.withUnsafeMutableBufferPointer { argv in musickit_early_load_start(Int32(argv.count), argv.baseAddress) }
        }
        XCTAssertEqual(start(["play", "--device", "hw:0", "song.flac"]), 0)
        XCTAssertEqual(start(["play", "--device", "default", "song.flac"]), 0)
        guard let installed = dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL) else {
            throw XCTSkip("libpulse is not installed")
        }
        defer { dlclose(installed) }
        XCTAssertEqual(start(["play", "--device", "pulseaudio:speakers", "song.flac"]), 1)
        XCTAssertNotNil(dlopen("libpulse.so.0", RTLD_NOW | RTLD_NOLOAD), "loaded, and kept loaded")
    }
}
