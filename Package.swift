// swift-tools-version: 6.0
// OpenMusicKit: Apple's MusicKit API for Linux over a real-time ALSA audio engine.
// Layout and rules: README.md. Arrows point one way:
// apps -> MusicKit -> MusicKitCore, FoundationNetworking; musickit, musickitd -> MusicKitCore;
// MusicKitCore -> AudioEngine -> PlatformSupport -> CLinux; AudioEngine -> CALSA / CSndFile / CMPG123 / CFFmpeg / CSoxr / CEbur128 / CPulse; MusicKitCore -> CSQLite / COpenSSL / CPNG;
// musickitd -> MusicKitDaemon -> MusicKitCore, CSystemd; musickit -> MusicKitTerminal -> MusicKitCore.
import PackageDescription

let package = Package(
    name: "OpenMusicKit",
    products: [
        .library(name: "AudioEngine", targets: ["AudioEngine"]),
        .library(name: "MusicKit", targets: ["MusicKit"]),
        .library(name: "MusicKitTerminal", targets: ["MusicKitTerminal"]),
        .executable(name: "musickit", targets: ["musickit"]),
        .executable(name: "musickitd", targets: ["musickitd"]),
        .executable(name: "musickit-bench", targets: ["Benchmarks"]),
        .executable(name: "musickit-workout", targets: ["WorkoutApp"]),
    ],
    targets: [
        // C libraries from Debian's packages, one system-library target each.
        // ALSA's header (libasound2-dev), and libasound opened when the engine first needs a device
        // (Sources/CALSA/ALSALibrary.c), not linked: a command that plays nothing does not load it.
        .target(name: "CALSA", path: "Sources/CALSA"),
        // libsndfile's and libsoxr's headers (libsndfile1-dev, libsoxr-dev). Not linked: the engine
        // opens libsndfile.so.1 (which loads eight codec libraries) and libsoxr.so.0 when it first
        // decodes or resamples (Sources/AudioEngine/SndFile.swift, SampleRateConverter.swift), so
        // that a command that plays nothing does not load them at start (0.75 ms).
        .systemLibrary(name: "CSndFile", path: "Sources/CSndFile"),
        .systemLibrary(name: "CMPG123", path: "Sources/CMPG123"),
        .systemLibrary(name: "CSoxr", path: "Sources/CSoxr"),
        // libebur128's header (libebur128-dev), for measuring songs' loudness. Not linked: opened
        // when a file is first measured (Sources/AudioEngine/LoudnessMeter.swift).
        .systemLibrary(name: "CEbur128", path: "Sources/CEbur128"),
        // FFmpeg's headers (libavformat-dev, libavcodec-dev, libavutil-dev), for MP4 audio (AAC,
        // ALAC). Not linked: opened when the first MP4 file is (Sources/AudioEngine/FFmpeg.swift).
        .systemLibrary(name: "CFFmpeg", path: "Sources/CFFmpeg"),
        // libpulse's headers (libpulse-dev), for the native PulseAudio/PipeWire output (the
        // `pulseaudio` devices). Not linked: opened when such a device is
        // (Sources/AudioEngine/PulseLibrary.swift).
        .systemLibrary(name: "CPulse", path: "Sources/CPulse"),
        // Linux calls that Swift's Glibc module does not export (eventfd, thread names).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // SQLite's header (libsqlite3-dev). Not linked: opened when the first database is
        // (Sources/MusicKitCore/Store/SQLite.swift), so that a command that opens none, such as
        // `musickit next`, does not load it at start (~0.2 ms).
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        // sd-bus's header, for MPRIS on the session bus (libsystemd-dev). Not linked: musickitd
        // opens libsystemd.so.0 when it connects (Sources/MusicKitDaemon/SDBus.swift).
        .systemLibrary(name: "CSystemd", path: "Sources/CSystemd"),
        // OpenSSL's headers, for signing developer tokens and for TLS (libssl-dev). Not linked:
        // libcrypto is opened when a token is first signed, libssl at the first HTTPS request
        // (Sources/MusicKitCore/Support/OpenSSL.swift).
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL"),
        // libpng's header, for artwork (libpng-dev). Not linked: opened when an image is first
        // read or scaled (Sources/MusicKitCore/Support/PNG.swift).
        .systemLibrary(name: "CPNG", path: "Sources/CPNG"),

        // The plumbing every module shares: C libraries opened when first needed (dlopen
        // tables), named threads, waits (waitFor, abandonable waits) and private files written
        // atomically. At the bottom, so that the terminal screens and the daemon's service
        // need not import the audio engine for them.
        .target(
            name: "PlatformSupport",
            dependencies: ["CLinux"]
        ),
        .target(
            name: "AudioEngine",
            dependencies: ["PlatformSupport", "CALSA", "CSndFile", "CMPG123", "CFFmpeg", "CSoxr", "CEbur128", "CPulse", "CLinux"],
            swiftSettings: [
                // `@_noLocks` on the render step is verified where generics are specialized:
                // in optimized builds (`swift build -c release`). Unoptimized builds cannot see
                // through generic calls, so the attribute is only there in release builds
                // (`#if MUSICKIT_CHECKS_NO_LOCKS` on each). A define, not an unsafe flag: SwiftPM
                // refuses a versioned dependency whose targets carry unsafe flags (issue #43).
                .define("MUSICKIT_CHECKS_NO_LOCKS", .when(configuration: .release)),
            ]
        ),
        // Everything of MusicKit but Foundation's URL-loading types: the module the CLI and
        // musickitd link, so that their starts do not load FoundationNetworking (libcurl and
        // ~25 more libraries).
        .target(
            name: "MusicKitCore",
            dependencies: ["PlatformSupport", "AudioEngine", "CSQLite", "COpenSSL", "CPNG"]
        ),
        // What apps import: MusicKitCore re-exported, with `MusicDataRequest(urlRequest:)` and
        // `MusicDataResponse.urlResponse` in Foundation's types, as on Apple platforms.
        .target(
            name: "MusicKit",
            dependencies: ["MusicKitCore"]
        ),
        // MusicKit's screens for a terminal: the music picker, the subscription offer, artwork
        // drawn as text (libchafa) and the full-screen terminal they draw on. What SwiftUI is to
        // MusicKit on Apple's platforms, and like it a module of its own: an app that shows
        // nothing on a terminal gets no terminal code and no signal handlers.
        .target(
            name: "MusicKitTerminal",
            dependencies: ["MusicKitCore", "PlatformSupport"]
        ),
        // The system player's service, as musickitd runs it: its own protocol, MPD's and MPRIS
        // (sd-bus) on one player. Not part of what apps link (Apple's system player is a
        // service outside the app's framework too); SystemMusicPlayer, its client, is MusicKit's.
        .target(
            name: "MusicKitDaemon",
            dependencies: ["MusicKitCore", "AudioEngine", "PlatformSupport", "CSystemd"]
        ),
        // Work done at process start, before the Swift runtime starts: the transport commands'
        // request (`musickit next` as soon as `mpc next`, Sources/CEarlyRequest/EarlyRequest.c)
        // and `musickit play`'s PulseAudio library (EarlyLoad.c).
        .target(name: "CEarlyRequest"),
        .executableTarget(
            name: "musickit",
            dependencies: ["MusicKitCore", "MusicKitTerminal", "AudioEngine", "PlatformSupport", "CEarlyRequest"]
        ),
        .executableTarget(
            name: "musickitd",
            dependencies: ["MusicKitDaemon", "MusicKitCore", "PlatformSupport"]
        ),
        // The talk's workout app for a terminal, written against MusicKit's public API only.
        .executableTarget(
            name: "WorkoutApp",
            dependencies: ["MusicKit", "MusicKitTerminal"],
            path: "Examples/WorkoutApp"
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["AudioEngine", "AudioMeasurement", "MusicKitCore", "PlatformSupport", "CLinux"],
            path: "Benchmarks",
            exclude: ["RESULTS.md", "CATALOG-RESULTS.md", "LIBRARY-RESULTS.md"]
        ),
        // Real-time measurement at a PulseAudio monitor: shared by the real-time tests and
        // the benchmarks; not part of the product.
        .target(
            name: "AudioMeasurement",
            dependencies: ["AudioEngine", "PlatformSupport"]
        ),

        // Counts malloc/free per thread by interposing the allocator in the test process.
        .target(name: "AllocationCounter", path: "Tests/AllocationCounter"),
        // Test signals, audio files, capture devices and the test sink's settings, for the tests.
        .target(name: "AudioTestSupport", dependencies: ["AudioEngine", "AudioMeasurement", "MusicKitCore", "PlatformSupport"], path: "Tests/AudioTestSupport"),
        .testTarget(
            name: "PlatformSupportTests",
            dependencies: ["PlatformSupport", "CLinux"]
        ),
        .testTarget(
            name: "AudioEngineTests",
            dependencies: ["AudioEngine", "PlatformSupport", "AllocationCounter", "AudioMeasurement", "AudioTestSupport"]
        ),
        .testTarget(
            name: "MusicKitTests",
            dependencies: ["MusicKit", "MusicKitCore", "MusicKitDaemon", "MusicKitTerminal", "musickit", "WorkoutApp", "AudioEngine", "PlatformSupport",
                           "AudioMeasurement", "AudioTestSupport"],
            exclude: ["Fixtures/README.md"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "musickitTests",
            dependencies: ["musickit", "CEarlyRequest", "MusicKitCore", "MusicKitTerminal", "AudioEngine", "PlatformSupport", "AudioMeasurement",
                           "AudioTestSupport"]
        ),
    ]
)
