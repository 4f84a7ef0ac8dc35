@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import CLinux
import Foundation
import Synchronization
import XCTest

/// The whole engine writing into ALSA's `file` plugin: what the device received, frame by frame.
final class EngineCaptureTests: XCTestCase {
    private var directory: URL!
    private var captureURL: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        captureURL = directory.appendingPathComponent("capture.raw")
    }

    /// Writes `signal` cut at `cuts` (frame offsets) into consecutive FLAC files, or ALAC in
    /// MP4 (`.m4a`, by ffmpeg) with `alac`.
    private func album(_ signal: [Float], cuts: [Int], channels: Int = 2, prefix: String = "track", alac: Bool = false) throws -> [String] {
        let bounds = [0] + cuts + [signal.count / channels]
        return try zip(bounds, bounds.dropFirst()).enumerated().map { index, range in
            let url = directory.appendingPathComponent("\(prefix)\(index + 1).flac")
            try writeAudioFile(url, Array(signal[range.0 * channels ..< range.1 * channels]))
            guard alac else { return url.path }
            let m4a = url.deletingPathExtension().appendingPathExtension("m4a")
            try encodeWithFFmpeg(url, to: m4a, codec: "alac")
            return m4a.path
        }
    }

    private func play(_ paths: [String], configure: (inout AudioEngineConfiguration) -> Void = { _ in })
        throws -> (capture: [Int16], events: [AudioEngineEvent], engine: AudioEngine) {
        var configuration = captureConfiguration(captureURL)
        configure(&configuration)
        let engine = AudioEngine(configuration: configuration)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.play()
        recorder.waitForQueueFinished()
        engine.stop()
        return (try readCapture(captureURL), recorder.events, engine)
    }

    /// The capture with its trailing drain silence checked and removed.
    private func assertCapture(_ capture: [Int16], equals expected: [Int16], file: StaticString = #filePath,
                               line: UInt = #line) {
        XCTAssertGreaterThanOrEqual(capture.count, expected.count, "capture too short", file: file, line: line)
        let prefix = Array(capture.prefix(expected.count))
        if prefix != expected {
            let first = zip(prefix, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? prefix.count
            XCTFail("capture differs from the expected signal at sample \(first) (frame \(first / 2))",
                    file: file, line: line)
        }
        XCTAssertTrue(capture.dropFirst(expected.count).allSatisfy { $0 == 0 },
                      "only drain silence follows the queue", file: file, line: line)
    }

    /// An entry's gain scales every one of its samples by the same factor, and only its own:
    /// the entry before it, at 1, is bit-exact, and the boundary stays without a gap.
    func testAnEntrysGainScalesItsSamplesAndOnlyItsOwn() throws {
        let signal = TestSignal.sweep(frames: 30_000)
        let paths = try album(signal, cuts: [12_345])
        let gain = ReplayGain.amplitude(gainDB: -6, peak: 0.5)  // 0.501…, below the peak's limit of 2
        XCTAssertEqual(gain, Float(pow(10, -6.0 / 20)), accuracy: 1e-7)
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(entries: [AudioEntry(token: .init(rawValue: 1), path: paths[0]),
                                                 AudioEntry(token: .init(rawValue: 2), path: paths[1], gain: gain)]))
        try engine.play()
        recorder.waitForQueueFinished()
        engine.stop()
        let exact = signal.map { Int16(($0 * 32_768).rounded(.toNearestOrEven)) }
        let cut = 12_345 * 2
        let expected = Array(exact[..<cut]) + signal[cut...].map { sample -> Int16 in
            // As the engine does it: the decoded float (the file's 16-bit value) times the gain, then to 16 bits.
            let decoded = Float(Int16((sample * 32_768).rounded(.toNearestOrEven))) / 32_768
            return Int16((decoded * gain * 32_768).rounded(.toNearestOrEven))
        }
        assertCapture(try readCapture(captureURL), equals: expected)
    }

    /// A file's ReplayGain tags, in each tag format the decoders meet (FLAC's comments, MP3's
    /// ID3v2 `TXXX` frames, Opus's R128 gains), as ffmpeg writes them; broken values are named
    /// and never applied.
    func testLoudnessTagsAreReadFromEveryFormatAndBrokenOnesIgnored() throws {
        let source = directory.appendingPathComponent("source.flac")
        try writeAudioFile(source, TestSignal.sweep(frames: 44_100))
        let tags = ["-metadata", "REPLAYGAIN_TRACK_GAIN=-6.52 dB", "-metadata", "REPLAYGAIN_TRACK_PEAK=0.988525",
                    "-metadata", "REPLAYGAIN_ALBUM_GAIN=+1.30 dB", "-metadata", "REPLAYGAIN_ALBUM_PEAK=1.000000"]
        let expected = LoudnessTags(trackGainDB: -6.52, trackPeak: 0.988525, albumGainDB: 1.3, albumPeak: 1)
        for (name, codec) in [("tagged.flac", "flac"), ("tagged.mp3", "libmp3lame"), ("tagged.ogg", "libvorbis")] {
            let url = directory.appendingPathComponent(name)
            try encodeWithFFmpeg(source, to: url, codec: codec, arguments: tags)
            XCTAssertEqual(AudioFileDecoder.loudnessTags(atPath: url.path), expected, name)
        }
        let opus = directory.appendingPathComponent("tagged.opus")
        try encodeWithFFmpeg(source, to: opus, codec: "libopus", arguments: ["-metadata", "R128_TRACK_GAIN=-1280"])
        XCTAssertEqual(AudioFileDecoder.loudnessTags(atPath: opus.path)?.trackGainDB, 0, "−5 dB to −23 LUFS is 0 dB to −18")
        let broken = directory.appendingPathComponent("broken.flac")
        try encodeWithFFmpeg(source, to: broken, codec: "flac",
                             arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=+90 dB", "-metadata", "REPLAYGAIN_ALBUM_GAIN=loud"])
        let read = try XCTUnwrap(AudioFileDecoder.loudnessTags(atPath: broken.path))
        XCTAssertNil(read.trackGainDB)
        XCTAssertNil(read.albumGainDB)
        XCTAssertEqual(Set(read.ignored), ["REPLAYGAIN_TRACK_GAIN=+90 dB", "REPLAYGAIN_ALBUM_GAIN=loud"])
        XCTAssertEqual(read.amplitude(for: .track(preampDB: 0)), 1, "nothing applied")
        XCTAssertEqual(AudioFileDecoder.loudnessTags(atPath: source.path), LoudnessTags(), "an untagged file")
    }

    /// mp3gain's ReplayGain values, in an APEv2 tag at the MP3's end (before an ID3v1 tag or
    /// not), which neither FFmpeg's MP3 demuxer nor libmpg123 reads.
    func testReplayGainInAnMP3sAPETagIsRead() throws {
        let source = directory.appendingPathComponent("source.flac")
        try writeAudioFile(source, TestSignal.sweep(frames: 44_100))
        func apeTag(_ items: [(String, String)]) -> Data {
            func word(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
            var body: [UInt8] = []
            for (key, value) in items {
                body += word(value.utf8.count) + word(0) + Array(key.utf8) + [0] + Array(value.utf8)
            }
            return Data(body + Array("APETAGEX".utf8) + word(2000) + word(body.count + 32) + word(items.count) + word(0)
                        + [UInt8](repeating: 0, count: 8))
        }
        let items = [("REPLAYGAIN_TRACK_GAIN", "-7.25 dB"), ("replaygain_track_peak", "0.812"), ("MP3GAIN_MINMAX", "120,210")]
        for withID3v1 in [false, true] {
            let mp3 = directory.appendingPathComponent("gained\(withID3v1).mp3")
            try encodeWithFFmpeg(source, to: mp3, codec: "libmp3lame", arguments: withID3v1 ? ["-write_id3v1", "1", "-metadata", "title=T"] : [])
            var data = try Data(contentsOf: mp3)
            var id3v1 = Data()
            if withID3v1 {
                id3v1 = data.suffix(128)
                XCTAssertEqual(Array(id3v1.prefix(3)), Array("TAG".utf8), "ffmpeg wrote an ID3v1 tag")
                data.removeLast(128)
            }
            try (data + apeTag(items) + id3v1).write(to: mp3)
            let tags = try XCTUnwrap(AudioFileDecoder.loudnessTags(atPath: mp3.path))
            XCTAssertEqual(tags.trackGainDB, -7.25, "ID3v1 after it: \(withID3v1)")
            XCTAssertEqual(tags.trackPeak, 0.812, "keys in any case")
            XCTAssertEqual(try decodeAll(mp3.path).samples.count, 44_100 * 2, "the tag is no audio")
        }
    }

    /// iTunes' Sound Check value in an MP4 (`iTunNORM`) is a track gain where no ReplayGain tag
    /// gives one: −10·log10(larger of words 1–2 ÷ 1000) dB, the peak from words 7–8; a broken one
    /// is named and not applied.
    func testITunesSoundCheckIsATrackGainWhereNoReplayGainIsGiven() throws {
        let source = directory.appendingPathComponent("source.flac")
        try writeAudioFile(source, TestSignal.sweep(frames: 44_100))
        func tagged(_ name: String, _ metadata: [String]) throws -> LoudnessTags {
            let url = directory.appendingPathComponent(name)
            try encodeWithFFmpeg(source, to: url, codec: "alac", arguments: ["-movflags", "use_metadata_tags"] + metadata)
            return try XCTUnwrap(AudioFileDecoder.loudnessTags(atPath: url.path), name)
        }
        let soundCheck = " 00000219 00000190 000005F1 000005F1 00024CA8 00024CA8 00004000 00007FFF 00024CA8 00024CA8"
        let read = try tagged("itunes.m4a", ["-metadata", "iTunNORM=\(soundCheck)"])
        XCTAssertEqual(try XCTUnwrap(read.trackGainDB), -10 * log10(537.0 / 1000), accuracy: 0.0001, "the louder channel's 0x219")
        XCTAssertEqual(try XCTUnwrap(read.trackPeak), 32_767.0 / 32_768, accuracy: 0.00001)
        XCTAssertNil(read.albumGainDB)
        let both = try tagged("both.m4a", ["-metadata", "iTunNORM=\(soundCheck)", "-metadata", "REPLAYGAIN_TRACK_GAIN=-6.00 dB"])
        XCTAssertEqual(both.trackGainDB, -6, "ReplayGain first")
        let broken = try tagged("broken.m4a", ["-metadata", "iTunNORM= 00000219 zz"])
        XCTAssertNil(broken.trackGainDB)
        XCTAssertEqual(broken.ignored, ["iTunNORM=00000219 zz"], "as read: trimmed")
    }

    /// With normalization on, an entry plays at its file's ReplayGain (here the track's −6 dB);
    /// off, the same file is bit-exact.
    func testAnEntryPlaysAtItsFilesReplayGainWhenNormalizationIsOn() throws {
        let signal = TestSignal.sweep(frames: 20_000)
        let plain = directory.appendingPathComponent("plain.flac")
        try writeAudioFile(plain, signal)
        let tagged = directory.appendingPathComponent("tagged.flac")
        try encodeWithFFmpeg(plain, to: tagged, codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-6.00 dB",
                                                                            "-metadata", "REPLAYGAIN_TRACK_PEAK=0.5"])
        let exact = signal.map { Int16(($0 * 32_768).rounded(.toNearestOrEven)) }
        // Values known before the open (the player's store: AudioEntry.knownLoudness) are used
        // instead of the file's tags, which are then not read.
        let known = LoudnessTags(trackGainDB: -12, trackPeak: 0.5)
        for (normalization, knownLoudness, dB) in [(LoudnessNormalization.off, LoudnessTags?.none, 0.0), (.track(preampDB: 0), nil, -6),
                                                   (.track(preampDB: 0), known, -12)] {
            let engine = AudioEngine(configuration: captureConfiguration(captureURL))
            let recorder = EventRecorder(engine)
            var entry = AudioEntry(token: .init(rawValue: 1), path: tagged.path, normalization: normalization)
            entry.knownLoudness = knownLoudness
            engine.setQueue(AudioEntryList(entries: [entry]))
            try engine.play()
            recorder.waitForQueueFinished()
            engine.stop()
            let gain = Float(pow(10, dB / 20))
            let expected = normalization == .off ? exact
                : exact.map { Int16((Float($0) / 32_768 * gain * 32_768).rounded(.toNearestOrEven)) }
            assertCapture(try readCapture(captureURL), equals: expected)
        }
    }

    /// ReplayGain's factor: the gain and preamp in dB, never past what the peak allows, and 1
    /// for nothing known or nonsense.
    func testReplayGainAmplitudeKeepsThePeakBelowFullScale() {
        XCTAssertEqual(ReplayGain.amplitude(gainDB: nil, peak: 0.9), 1)
        XCTAssertEqual(ReplayGain.amplitude(gainDB: .nan, peak: 0.9), 1)
        XCTAssertEqual(ReplayGain.amplitude(gainDB: -9.8, peak: nil), Float(pow(10, -9.8 / 20)), accuracy: 1e-7)
        XCTAssertEqual(ReplayGain.amplitude(gainDB: 6, peak: 0.8), 1.25, accuracy: 1e-6, "+6 dB would clip a 0.8 peak")
        XCTAssertEqual(ReplayGain.amplitude(gainDB: -3, peak: 0.5, preampDB: 3), 1, accuracy: 1e-6)
    }

    func testAlbumCutAtOddFramesPlaysBackBitExactWithoutGaps() throws {
        // Cuts at frames that are multiples of no period size (256, 441, 1024, ...).
        let signal = TestSignal.sweep(frames: 61_111)
        let paths = try album(signal, cuts: [17_317, 40_001])
        let (capture, events, _) = try play(paths)
        assertCapture(capture, equals: pcm16(signal))
        XCTAssertEqual(events.filter { if case .entryStarted = $0 { true } else { false } }, [
            .entryStarted(.init(rawValue: 1), streamFrame: 0),
            .entryStarted(.init(rawValue: 2), streamFrame: 17_317),
            .entryStarted(.init(rawValue: 3), streamFrame: 40_001),
        ], "each entry starts at the frame where the previous one ended")
        XCTAssertEqual(events.last, .queueFinished)
        XCTAssertFalse(events.contains { if case .underrun = $0 { true } else { false } })
    }

    func testAnALACAlbumInMP4PlaysBackBitExactWithoutGaps() throws {
        let signal = TestSignal.sweep(frames: 61_111)
        let paths = try album(signal, cuts: [17_317, 40_001], alac: true)
        let (capture, events, _) = try play(paths)
        assertCapture(capture, equals: pcm16(signal))
        XCTAssertEqual(events.filter { if case .entryStarted = $0 { true } else { false } }.count, 3)
        XCTAssertFalse(events.contains { if case .entryFailed = $0 { true } else { false } }, "\(events)")
    }

    /// A device warmed up ahead (as `musickit play` does at its start) is the one the engine
    /// plays on, and nothing reaches it before the queue; warmed up for another rate, the engine
    /// opens its own.
    func testAWarmedUpDeviceIsTakenByTheEngineOnlyWhenItFits() throws {
        let signal = TestSignal.sweep(frames: 20_000)
        let paths = try album(signal, cuts: [])
        let taken = WarmDevice.taken.load(ordering: .relaxed)
        AudioEngine.warmUpDevice(captureConfiguration(captureURL))
        let (capture, _, _) = try play(paths)
        assertCapture(capture, equals: pcm16(signal))
        XCTAssertEqual(WarmDevice.taken.load(ordering: .relaxed), taken + 1, "the engine played on the warmed-up device")

        AudioEngine.warmUpDevice(captureConfiguration(captureURL), sampleRate: 48_000)
        let (again, _, _) = try play(paths)
        assertCapture(again, equals: pcm16(signal))
        XCTAssertEqual(WarmDevice.taken.load(ordering: .relaxed), taken + 1, "a device for another rate is not taken")
    }

    /// With a device warming up, the engine decodes the first entry's first chunk before it
    /// takes the device. A first entry that opens but whose first chunk does not decode (a FLAC
    /// whose frames are gone) is still reported and skipped as the decoder thread would, and the
    /// next entry plays from its first frame; the same without a warm-up.
    func testAFirstEntryWhoseFirstChunkFailsIsSkippedWithOrWithoutAWarmedUpDevice() throws {
        let signal = TestSignal.sweep(frames: 20_000)
        let broken = directory.appendingPathComponent("frames-gone.flac")
        try writeAudioFile(broken, TestSignal.sweep(frames: 20_000, startHz: 300, endHz: 3_000))
        var bytes = [UInt8](try Data(contentsOf: broken))
        // The first frame starts at FLAC's frame sync code (0xFFF8) after the metadata.
        guard let firstFrame = (4..<(bytes.count - 1)).first(where: { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xF8 }) else {
            return XCTFail("no frame sync in \(broken.path)")
        }
        for index in firstFrame..<bytes.count { bytes[index] = 0 }
        try Data(bytes).write(to: broken)
        let good = try album(signal, cuts: [])
        for warmedUp in [false, true] {
            if warmedUp { AudioEngine.warmUpDevice(captureConfiguration(captureURL)) }
            let (capture, events, _) = try play([broken.path] + good)
            assertCapture(capture, equals: pcm16(signal))
            let failures = events.compactMap { event -> UInt64? in
                if case .entryFailed(let token, _) = event { return token.rawValue }
                return nil
            }
            XCTAssertEqual(failures, [1], "warmed up: \(warmedUp); \(events)")
            XCTAssertTrue(events.contains(.entryStarted(.init(rawValue: 2), streamFrame: 0)), "warmed up: \(warmedUp); \(events)")
        }
    }

    /// A warm-up's first work (`musickit play` loads its first file's decoder library there) runs
    /// on the warm-up's own thread, not the caller's, and the device it then opens is the one
    /// taken.
    func testAWarmUpDoesItsFirstWorkOnItsOwnThreadThenOpensTheDevice() {
        let configuration = captureConfiguration(captureURL)
        let request = configuration.pcmRequest(sampleRate: 44_100)
        let name = configuration.deviceName
        let ranOn = Mutex<String?>(nil)
        WarmDevice.begin(name: name, request: request) {
            var buffer = [CChar](repeating: 0, count: 16)
            _ = pthread_getname_np(pthread_self(), &buffer, buffer.count)
            let threadName = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            ranOn.withLock { $0 = threadName }
        }
        let device = WarmDevice.take(name: name, request: request)
        XCTAssertNotNil(device, "the warmed-up device")
        XCTAssertEqual(ranOn.withLock { $0 }, "musickit-warm")
    }

    /// A device that does not open gives way to the configuration's fallback (the automatic
    /// choice: a server's socket was there, but nothing answered), warmed up or not; the
    /// statistics name the device the stream is open on.
    func testADeviceThatDoesNotOpenGivesWayToTheFallback() throws {
        let signal = TestSignal.sweep(frames: 20_000)
        let paths = try album(signal, cuts: [])
        var configuration = captureConfiguration(captureURL)
        let capture = configuration.deviceName
        configuration.fallbackDeviceName = capture
        configuration.deviceName = "hw:99,0"  // a card no machine has
        for warmedUp in [false, true] {
            let taken = WarmDevice.taken.load(ordering: .relaxed)
            if warmedUp { AudioEngine.warmUpDevice(configuration) }
            let engine = AudioEngine(configuration: configuration)
            let recorder = EventRecorder(engine)
            engine.setQueue(AudioEntryList(paths: paths))
            try engine.play()
            XCTAssertEqual(engine.statistics.deviceName, capture, "warmed up: \(warmedUp)")
            recorder.waitForQueueFinished()
            engine.stop()
            assertCapture(try readCapture(captureURL), equals: pcm16(signal))
            XCTAssertEqual(WarmDevice.taken.load(ordering: .relaxed), taken + (warmedUp ? 1 : 0))
        }
        configuration.fallbackDeviceName = nil
        let engine = AudioEngine(configuration: configuration)
        engine.setQueue(AudioEntryList(paths: paths))
        XCTAssertThrowsError(try engine.play(), "without a fallback, the device's error") { error in
            guard case .device(let device)? = error as? AudioEngineError else { return XCTFail("\(error)") }
            XCTAssertEqual(device.device, "hw:99,0")
        }
    }

    /// With a crossfade, the end of one entry and the start of the next overlap: the old fades
    /// out while the new fades in (equal power); outside the overlap both are bit-exact.
    func testACrossfadeOverlapsTheEndOfAnEntryWithTheStartOfTheNext() throws {
        let first = TestSignal.tone(hz: 440, frames: 30_000, sampleRate: 44_100, channels: 2)
        let second = TestSignal.tone(hz: 660, frames: 30_000, sampleRate: 44_100, channels: 2)
        let paths = try album(first + second, cuts: [30_000])
        let overlap = 11_025  // 0.25 s
        var configuration = captureConfiguration(captureURL)
        configuration.sampleRate = 44_100
        let engine = AudioEngine(configuration: configuration)
        engine.setCrossfade(seconds: 0.25)
        XCTAssertEqual(engine.crossfadeSeconds, 0.25)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.play()
        recorder.waitForQueueFinished()
        engine.stop()
        let capture = trimmingTrailingSilence(try readCapture(captureURL))

        let mixStart = 30_000 - overlap
        XCTAssertEqual(capture.count, (60_000 - overlap) * 2, "the overlap shortens the queue by its length")
        XCTAssertEqual(Array(capture[..<(mixStart * 2)]), Array(pcm16(first)[..<(mixStart * 2)]),
                       "the first entry before the overlap is untouched")
        XCTAssertEqual(Array(capture[(30_000 * 2)...]), Array(pcm16(second)[(overlap * 2)...]),
                       "the second entry after the overlap is untouched")
        var largestError = 0
        for frame in 0..<overlap {
            let progress = Float(frame) / Float(overlap)
            for channel in 0..<2 {
                let mixed = first[(mixStart + frame) * 2 + channel] * cos(progress * .pi / 2)
                    + second[frame * 2 + channel] * sin(progress * .pi / 2)
                let expected = Int(pcm16([mixed])[0])
                largestError = max(largestError, abs(Int(capture[(mixStart + frame) * 2 + channel]) - expected))
            }
        }
        XCTAssertLessThanOrEqual(largestError, 1, "the overlap is the equal-power mix of the two")
        XCTAssertTrue(recorder.events.contains(.entryStarted(.init(rawValue: 2), streamFrame: mixStart)),
                      "the next entry is heard from the start of the overlap: \(recorder.events)")
    }

    func testBundledGaplessAlbumPlaysAsOneContinuousRecording() throws {
        // Assets/Albums/through-space-gapless: 24 s of one recording cut into three FLAC tracks.
        let album = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Assets/Albums/through-space-gapless")
        let paths = (1...3).map { album.appendingPathComponent("part-\($0).flac").path }
        var continuous: [Float] = []
        for path in paths {
            let decoder = try AudioFileDecoder(path: path)
            var buffer = [Float](repeating: 0, count: decoder.info.frameCount * 2)
            let frames = try buffer.withUnsafeMutableBufferPointer {
                try decoder.read(into: $0.baseAddress!, frameCount: decoder.info.frameCount)
            }
            XCTAssertEqual(frames, decoder.info.frameCount)
            continuous += buffer
        }
        XCTAssertEqual(continuous.count / 2, 1_058_400, "24 s at 44.1 kHz")
        let (capture, events, _) = try play(paths)
        assertCapture(capture, equals: pcm16(continuous))
        XCTAssertTrue(events.contains(.entryStarted(.init(rawValue: 2), streamFrame: 352_817)))
        XCTAssertTrue(events.contains(.entryStarted(.init(rawValue: 3), streamFrame: 705_601)))
    }

    func testEventsComeInHeardOrder() throws {
        let signal = TestSignal.sweep(frames: 9_000)
        let paths = try album(signal, cuts: [3_000, 6_000])
        let (_, events, _) = try play(paths)
        let token = { AudioEntry.Token(rawValue: $0) }
        XCTAssertEqual(events, [
            .entryStarted(token(1), streamFrame: 0), .entryFinished(token(1)),
            .entryStarted(token(2), streamFrame: 3_000), .entryFinished(token(2)),
            .entryStarted(token(3), streamFrame: 6_000), .entryFinished(token(3)),
            .queueFinished,
        ])
    }

    func testEntryAtAnotherRateIsConvertedWithoutReopeningTheStream() throws {
        let first = TestSignal.sweep(frames: 20_000)
        let last = TestSignal.sweep(frames: 15_000, startHz: 900, endHz: 300)
        let firstURL = directory.appendingPathComponent("a.flac")
        let middleURL = directory.appendingPathComponent("b-48k.flac")
        let lastURL = directory.appendingPathComponent("c.flac")
        try writeAudioFile(firstURL, first)
        try writeAudioFile(middleURL, TestSignal.tone(hz: 480, frames: 48_000, sampleRate: 48_000, channels: 2),
                           sampleRate: 48_000)
        try writeAudioFile(lastURL, last)
        var configuration = captureConfiguration(captureURL)
        let engine = AudioEngine(configuration: configuration)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [firstURL.path, middleURL.path, lastURL.path]))
        try engine.play()
        let rate = engine.statistics.device?.sampleRate
        recorder.waitForQueueFinished()
        XCTAssertEqual(engine.statistics.device?.sampleRate, rate, "one stream for the whole queue")
        engine.stop()
        configuration.sampleRate = nil
        XCTAssertEqual(rate, 44_100, "the first entry's rate")
        let capture = try readCapture(captureURL)
        // 48,000 frames at 48 kHz are 44,100 frames at 44.1 kHz: the last entry starts right after.
        XCTAssertTrue(recorder.events.contains(.entryStarted(.init(rawValue: 3), streamFrame: 20_000 + 44_100)),
                      "\(recorder.events)")
        let expectedFirst = pcm16(first)
        let expectedLast = pcm16(last)
        XCTAssertEqual(Array(capture.prefix(expectedFirst.count)), expectedFirst)
        let lastStart = (20_000 + 44_100) * 2
        XCTAssertEqual(Array(capture[lastStart ..< lastStart + expectedLast.count]), expectedLast)
        // The converted tone has no silence in it: its samples keep swinging.
        let converted = capture[expectedFirst.count ..< lastStart]
        let quietRuns = converted.split(whereSeparator: { abs(Int($0)) > 200 }).map(\.count).max() ?? 0
        XCTAssertLessThan(quietRuns, 40, "no gap inside or around the converted entry")
    }

    func testBadFilesAreSkippedWithTheirReasonAndTheRestPlays() throws {
        let good1 = TestSignal.sweep(frames: 8_000)
        let good2 = TestSignal.sweep(frames: 7_000, startHz: 2_000, endHz: 500)
        let good1URL = directory.appendingPathComponent("good1.flac")
        let good2URL = directory.appendingPathComponent("good2.flac")
        try writeAudioFile(good1URL, good1)
        try writeAudioFile(good2URL, good2)
        let missing = directory.appendingPathComponent("missing.flac")
        let empty = directory.appendingPathComponent("empty.ogg")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        let corrupt = directory.appendingPathComponent("corrupt.flac")
        try Data((0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }).write(to: corrupt)
        let unsupported = directory.appendingPathComponent("cover.txt")
        try "lyrics".write(to: unsupported, atomically: true, encoding: .utf8)
        let truncated = directory.appendingPathComponent("truncated.wav")
        let truncatedSignal = TestSignal.sweep(frames: 10_000, startHz: 300, endHz: 3_000)
        try writeAudioFile(truncated, truncatedSignal, format: .wav16)
        let wav = try Data(contentsOf: truncated)
        let keptBytes = 44 + 4_000 * 4  // the header and 4,000 frames
        try wav.prefix(keptBytes).write(to: truncated)

        let paths = [good1URL.path, missing.path, empty.path, corrupt.path, unsupported.path, truncated.path, good2URL.path]
        let (capture, events, _) = try play(paths)

        let expected = pcm16(good1) + pcm16(Array(truncatedSignal.prefix(4_000 * 2)))
            + pcm16(good2)
        assertCapture(capture, equals: expected)

        let failures = events.compactMap { event -> (UInt64, DecoderError.Reason)? in
            if case .entryFailed(let token, let error) = event { return (token.rawValue, error.reason) }
            return nil
        }
        XCTAssertEqual(failures.map(\.0), [2, 3, 4, 5, 6], "each bad entry is reported, in queue order")
        guard failures.count == 5 else { return }
        XCTAssertEqual(failures[0].1, .missing)
        XCTAssertEqual(failures[1].1, .empty)
        guard case .corrupt = failures[2].1 else { return XCTFail("corrupt: \(failures[2].1)") }
        guard case .unsupportedFormat = failures[3].1 else { return XCTFail("unsupported: \(failures[3].1)") }
        XCTAssertEqual(failures[4].1, .truncated(expectedFrames: 10_000, decodedFrames: 4_000))
        XCTAssertTrue(events.contains(.entryStarted(.init(rawValue: 7), streamFrame: 12_000)))
        XCTAssertEqual(events.last, .queueFinished)
    }

    func testAQueueWithNothingPlayableThrowsWithEveryReason() throws {
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        engine.setQueue(AudioEntryList(paths: ["/nonexistent/a.flac", "/nonexistent/b.ogg"]))
        XCTAssertThrowsError(try engine.play()) { error in
            guard case .nothingPlayable(let failures) = error as? AudioEngineError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(failures.map(\.path), ["/nonexistent/a.flac", "/nonexistent/b.ogg"])
        }
        XCTAssertEqual(engine.status, .stopped)
    }

    func testUnknownDeviceNamesTheDeviceAndTheOnesThatExist() throws {
        let url = directory.appendingPathComponent("a.flac")
        try writeAudioFile(url, TestSignal.sweep(frames: 1_000))
        let engine = AudioEngine(configuration: AudioEngineConfiguration(deviceName: "no_such_device_here"))
        engine.setQueue(AudioEntryList(paths: [url.path]))
        XCTAssertThrowsError(try engine.prepare()) { error in
            guard case .device(.alsa(let alsa)) = error as? AudioEngineError else { return XCTFail("an ALSA error: \(error)") }
            XCTAssertEqual(alsa.device, "no_such_device_here")
            XCTAssertEqual(alsa.operation, "snd_pcm_open")
            let message = "\(error)"
            XCTAssertTrue(message.contains("no_such_device_here"), message)
            XCTAssertTrue(message.contains("--device"), message)
            XCTAssertTrue(message.contains("null"), "lists device names ALSA knows: \(message)")
        }
    }

    /// An event that a session sends after it was stopped is not passed on (a start of the old
    /// queue's entry could be taken for the next queue's entry of the same number); one from the
    /// open session is.
    func testAStoppedSessionsLateEventIsNotPassedOn() throws {
        let paths = try album(TestSignal.sweep(frames: 4_410), cuts: [])
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        let stopped = try XCTUnwrap(engine.currentSession)
        engine.stop()
        let late = AudioEngineEvent.entryStarted(AudioEntry.Token(rawValue: 1), streamFrame: 0)
        engine.deliver(late, from: stopped)
        XCTAssertFalse(recorder.events.contains(late), "\(recorder.events)")

        try engine.prepare()
        let open = try XCTUnwrap(engine.currentSession)
        XCTAssertFalse(open === stopped)
        engine.deliver(late, from: open)
        XCTAssertTrue(recorder.events.contains(late), "\(recorder.events)")
        engine.stop()
    }

    func testPrepareFillsTheDeviceSoPlayOnlyStartsIt() throws {
        let signal = TestSignal.sweep(frames: 30_000)
        let paths = try album(signal, cuts: [])
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        XCTAssertEqual(engine.status, .prepared)
        XCTAssertEqual(engine.position.token?.rawValue, 1, "the first entry is at the output")
        XCTAssertEqual(engine.position.frame, 0)
        XCTAssertFalse(recorder.events.contains { if case .entryStarted = $0 { true } else { false } },
                       "nothing is heard before play()")
        try engine.play()
        recorder.waitForQueueFinished()
        engine.stop()
        assertCapture(try readCapture(captureURL), equals: pcm16(signal))
    }

    // MARK: Skips, seeks, pauses

    /// Prepares the queue, runs `action` before play, and returns the capture (trailing silence removed).
    private func captureAfter(_ paths: [String], configure: (inout AudioEngineConfiguration) -> Void = { _ in },
                              _ action: (AudioEngine) throws -> Void) throws -> (capture: [Int16], engine: AudioEngine) {
        var configuration = captureConfiguration(captureURL)
        configure(&configuration)
        let engine = AudioEngine(configuration: configuration)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        try action(engine)
        try engine.play()
        recorder.waitForQueueFinished()
        let statistics = engine.statistics
        engine.stop()
        _ = statistics
        return (trimmingTrailingSilence(try readCapture(captureURL)), engine)
    }

    private func waitUntil(_ condition: () -> Bool, timeout: TimeInterval = 5) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition() && Date() < deadline { usleep(1_000) }
    }

    private func assertEnds(_ capture: [Int16], with expected: [Int16], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertGreaterThanOrEqual(capture.count, expected.count, file: file, line: line)
        XCTAssertEqual(Array(capture.suffix(expected.count)), expected,
                       "after the skip the rest of the queue plays whole and in order", file: file, line: line)
    }

    func testSkipTakesTheNextEntryFromThePrerollAndContinuesItSeamlessly() throws {
        let long = TestSignal.sweep(frames: 200_000)
        let second = TestSignal.sweep(frames: 30_000, startHz: 3_000, endHz: 100)
        let third = TestSignal.sweep(frames: 5_000, startHz: 500, endHz: 600)
        let paths = try album(long + second + third, cuts: [200_000, 230_000])
        var skips = AudioEngineStatistics.SkipSources()
        let (capture, _) = try captureAfter(paths) { engine in
            waitUntil { engine.isNextEntryPrerolled }
            XCTAssertTrue(engine.isNextEntryPrerolled)
            engine.skipToNextEntry()
            waitUntil { engine.statistics.skips.preroll == 1 }
            skips = engine.statistics.skips
        }
        XCTAssertEqual(skips.preroll, 1, "\(skips)")
        // The preroll slot holds 8,192 frames; the rest of the entry comes from the decoder.
        assertEnds(capture, with: pcm16(second + third))
    }

    func testSkipTakesTheNextEntryFromTheRingWhenItIsAlreadyDecoded() throws {
        // Shorter than the crossing lead (8,820 frames: four start buffers), so the decoder moves
        // on at once, and longer than what the prepared engine stages (the output's period,
        // 8,192 frames), so the next entry's start is in the ring, not in the staging.
        let short = TestSignal.sweep(frames: 8_600)
        let second = TestSignal.sweep(frames: 12_000, startHz: 3_000, endHz: 100)
        let paths = try album(short + second, cuts: [8_600])
        var skips = AudioEngineStatistics.SkipSources()
        let (capture, _) = try captureAfter(paths) { engine in
            usleep(200_000)  // the decoder reaches the second entry long before this
            engine.skipToNextEntry()
            waitUntil { engine.statistics.skips.ring == 1 }
            skips = engine.statistics.skips
        }
        XCTAssertEqual(skips.ring, 1, "\(skips)")
        assertEnds(capture, with: pcm16(second))
    }

    func testSkipReplaysTheNextEntryWhenItsStartIsAlreadyInTheDevice() throws {
        let tiny = TestSignal.sweep(frames: 300)
        let second = TestSignal.sweep(frames: 9_000, startHz: 3_000, endHz: 100)
        let paths = try album(tiny + second, cuts: [300])
        var skips = AudioEngineStatistics.SkipSources()
        let (capture, _) = try captureAfter(paths) { engine in
            engine.skipToNextEntry()
            waitUntil { engine.statistics.skips.deviceBuffer == 1 }
            skips = engine.statistics.skips
        }
        XCTAssertEqual(skips.deviceBuffer, 1, "\(skips)")
        assertEnds(capture, with: pcm16(second))
    }

    func testSkipPastTheLastEntryFinishesTheQueue() throws {
        let signal = TestSignal.sweep(frames: 100_000)
        let paths = try album(signal, cuts: [])
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        engine.skipToNextEntry()
        try engine.play()
        recorder.waitForQueueFinished()
        XCTAssertEqual(engine.statistics.skips.decoder, 1)
        XCTAssertEqual(engine.status, .finished)
        engine.stop()
        XCTAssertLessThan(try readCapture(captureURL).count / 2, 100_000, "the rest of the entry was skipped")
    }

    func testSkipToPreviousReturnsToTheEntryBeforeFromItsStart() throws {
        let first = TestSignal.sweep(frames: 60_000)
        let second = TestSignal.sweep(frames: 60_000, startHz: 3_000, endHz: 100)
        let paths = try album(first + second, cuts: [60_000])
        let (capture, _) = try captureAfter(paths) { engine in
            engine.skipToNextEntry()
            waitUntil { engine.position.token?.rawValue == 2 }
            engine.skipToPreviousEntry()
            waitUntil { engine.position.token?.rawValue == 1 }
        }
        assertEnds(capture, with: pcm16(first + second))
    }

    func testSeekContinuesTheEntryFromTheFrameAskedFor() throws {
        let first = TestSignal.sweep(frames: 90_000)
        let second = TestSignal.sweep(frames: 10_000, startHz: 3_000, endHz: 100)
        let paths = try album(first + second, cuts: [90_000])
        let (capture, engine) = try captureAfter(paths) { engine in
            engine.seek(toFrame: 33_333)
            waitUntil { engine.position.frame == 33_333 }
            XCTAssertEqual(engine.position.token?.rawValue, 1)
            XCTAssertEqual(engine.position.frame, 33_333)
        }
        _ = engine
        assertEnds(capture, with: pcm16(Array(first[(33_333 * 2)...]) + second))
    }

    func testPositionFollowsTheHeardEntry() throws {
        let signal = TestSignal.sweep(frames: 20_000)
        let paths = try album(signal, cuts: [12_000])
        let engine = AudioEngine(configuration: captureConfiguration(captureURL))
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        XCTAssertEqual(engine.position.token?.rawValue, 1)
        XCTAssertEqual(engine.position.frame, 0)
        XCTAssertEqual(engine.position.sampleRate, 44_100)
        try engine.play()
        recorder.waitForQueueFinished()
        XCTAssertNil(engine.position.token, "nothing is heard after the end of the queue")
        engine.stop()
        XCTAssertEqual(engine.status, .stopped)
    }
}
