@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import XCTest

/// Decoding (libsndfile, libmpg123), format by format, and the typed errors for bad files.
final class AudioFileDecoderTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    func testLosslessFormatsDecodeBitExactly() throws {
        let signal = TestSignal.sweep(frames: 10_000)
        for (name, format) in [("wav", AudioFileWriter.Format.wav16), ("flac", .flac16)] {
            let url = directory.appendingPathComponent("sweep.\(name)")
            try writeAudioFile(url, signal, format: format, tags: .init(title: "Sweep", artist: "Test", trackNumber: 3))
            let (info, samples) = try decodeAll(url.path)
            XCTAssertEqual(info.sampleRate, 44_100, name)
            XCTAssertEqual(info.channelCount, 2, name)
            XCTAssertEqual(info.frameCount, 10_000, name)
            XCTAssertEqual(samples, signal, "\(name) decodes to the exact samples written")
            XCTAssertEqual(info.title, "Sweep", name)
            XCTAssertEqual(info.artist, "Test", name)
        }
    }

    func testTagsAreTrimmedOfSurroundingWhiteSpaceAndBlankOnesLeftOut() throws {
        let url = directory.appendingPathComponent("tags.flac")
        try writeAudioFile(url, TestSignal.sweep(frames: 1_000), format: .flac16,
                           tags: .init(title: " \tSweep  in   Time\n", artist: "\u{2003}Ünïcödé Ärtist\u{00A0}",
                                       album: " \n\t ", genre: "Tones"))
        let info = try AudioFileDecoder(path: url.path).info
        XCTAssertEqual(info.title, "Sweep  in   Time", "white space inside a tag is kept")
        XCTAssertEqual(info.artist, "Ünïcödé Ärtist", "Unicode spaces around it go")
        XCTAssertNil(info.album, "a tag of white space only is no tag")
        XCTAssertEqual(info.genre, "Tones")
    }

    func testLossyFormatsDecodeToTheirLengthAndTone() throws {
        // A 1 kHz tone: lossy codecs change samples but keep its length and pitch.
        let rate = 48_000
        let tone = TestSignal.tone(hz: 1_000, frames: rate, sampleRate: rate, channels: 2)
        let formats: [(String, AudioFileWriter.Format)] = [
            ("ogg", .oggVorbis(quality: 0.5)), ("opus", .opus(quality: 0.5)), ("mp3", .mp3(quality: 0.5)),
        ]
        for (name, format) in formats {
            let url = directory.appendingPathComponent("tone.\(name)")
            try writeAudioFile(url, tone, sampleRate: rate, format: format)
            let (info, samples) = try decodeAll(url.path)
            XCTAssertEqual(info.sampleRate, rate, name)
            let frames = samples.count / 2
            XCTAssertEqual(Double(frames), Double(rate), accuracy: Double(rate) * 0.05, "\(name) keeps about 1 s")
            // Count rising zero crossings of the left channel in the middle half second.
            let middle = stride(from: frames / 4, to: frames * 3 / 4, by: 1).map { samples[$0 * 2] }
            let crossings = zip(middle, middle.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
            XCTAssertEqual(Double(crossings), 500, accuracy: 5, "\(name) keeps the 1 kHz pitch")
        }
    }

    /// MP3 through libmpg123's own handle (issue #43: no more taking stderr away while a file
    /// opens): gapless to the frame (the LAME header's delay and padding trimmed, as FFmpeg
    /// trims them), a seek lands on the frame a continuous decode has there, and the ID3v2 tags.
    func testMP3DecodesGaplessSeeksToTheFrameAndReadsItsID3Tags() throws {
        let source = directory.appendingPathComponent("source.flac")
        try writeAudioFile(source, TestSignal.tone(hz: 440, frames: 44_100, sampleRate: 44_100, channels: 2))
        let mp3 = directory.appendingPathComponent("tone.mp3")
        try encodeWithFFmpeg(source, to: mp3, codec: "libmp3lame", arguments: [
            "-b:a", "192k", "-metadata", "title=Tone", "-metadata", "artist=Tester", "-metadata", "album=Tests",
            "-metadata", "track=3/9", "-metadata", "disc=2/2", "-metadata", "album_artist=Various", "-metadata", "date=2026",
        ])
        let (info, samples) = try decodeAll(mp3.path)
        XCTAssertTrue(info.formatName.hasPrefix("MPEG"), info.formatName)
        XCTAssertEqual(info.frameCount, 44_100, "the LAME header's length")
        XCTAssertEqual(samples.count / 2, 44_100, "gapless: encoder delay and padding trimmed")
        XCTAssertEqual([info.title, info.artist, info.album, info.albumArtist, info.date], ["Tone", "Tester", "Tests", "Various", "2026"])
        XCTAssertEqual(info.trackNumber, 3)
        XCTAssertEqual(info.discNumber, 2)

        // FFmpeg's decode of the same file, as a reference: the same samples within rounding.
        let reference = directory.appendingPathComponent("reference.f32")
        XCTAssertEqual(try runTool("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-i", mp3.path, "-f", "f32le", "-c:a", "pcm_f32le",
                                                       reference.path], environment: [:]).code, 0)
        let expected = try Data(contentsOf: reference).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        XCTAssertEqual(expected.count, samples.count, "FFmpeg's length")
        let difference = zip(expected, samples).map { abs($0 - $1) }.max() ?? 1
        XCTAssertLessThan(difference, 0.001, "largest difference from FFmpeg's decode")

        let decoder = try AudioFileDecoder(path: mp3.path)
        for frame in [30_000, 1_234, 0] {
            try decoder.seek(toFrame: frame)
            let after = try decodeRest(decoder, frameLimit: 1_000)
            XCTAssertEqual(after, Array(samples[(frame * 2)..<((frame + 1_000) * 2)]), "a seek to frame \(frame)")
        }
    }

    func testMissingFileIsNamedAsMissing() {
        let path = directory.appendingPathComponent("nothing-here.flac").path
        XCTAssertThrowsError(try AudioFileDecoder(path: path)) { error in
            XCTAssertEqual(error as? DecoderError, DecoderError(path: path, reason: .missing))
            XCTAssertTrue("\(error)".contains("nothing-here.flac"))
        }
    }

    func testEmptyFileIsNamedAsEmpty() throws {
        let url = directory.appendingPathComponent("empty.ogg")
        _ = FileManager.default.createFile(atPath: url.path, contents: Data())
        XCTAssertThrowsError(try AudioFileDecoder(path: url.path)) { error in
            XCTAssertEqual((error as? DecoderError)?.reason, .empty)
        }
    }

    func testGarbageWithAnAudioExtensionIsCorrupt() throws {
        let url = directory.appendingPathComponent("garbage.flac")
        try Data((0..<4_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: url)
        XCTAssertThrowsError(try AudioFileDecoder(path: url.path)) { error in
            guard case .corrupt = (error as? DecoderError)?.reason else {
                return XCTFail("expected corrupt, got \(error)")
            }
        }
    }

    func testTextFileIsAnUnsupportedFormat() throws {
        let url = directory.appendingPathComponent("notes.txt")
        try "not audio at all\n".write(to: url, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try AudioFileDecoder(path: url.path)) { error in
            guard case .unsupportedFormat = (error as? DecoderError)?.reason else {
                return XCTFail("expected unsupported format, got \(error)")
            }
        }
    }

    func testCutShortWAVIsTruncatedAfterItsFrames() throws {
        let url = directory.appendingPathComponent("cut.wav")
        try writeAudioFile(url, TestSignal.sweep(frames: 20_000), format: .wav16)
        let data = try Data(contentsOf: url)
        try data.prefix(data.count / 2).write(to: url)
        let decoder = try AudioFileDecoder(path: url.path)
        var buffer = [Float](repeating: 0, count: 4_096 * 2)
        var decodedFrames = 0
        var caught: DecoderError?
        do {
            while true {
                let frames = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, frameCount: 4_096) }
                if frames == 0 { break }
                decodedFrames += frames
            }
        } catch let error as DecoderError {
            caught = error
        }
        XCTAssertGreaterThan(decodedFrames, 9_000, "what is there decodes")
        guard case .truncated(let expected, let decoded)? = caught?.reason else {
            return XCTFail("expected truncated, got \(String(describing: caught))")
        }
        XCTAssertEqual(expected, 20_000)
        XCTAssertEqual(decoded, decodedFrames)
    }

    func testADirectoryIsUnreadable() throws {
        XCTAssertThrowsError(try AudioFileDecoder(path: directory.path)) { error in
            guard case .unreadable = (error as? DecoderError)?.reason else {
                return XCTFail("expected unreadable, got \(error)")
            }
        }
    }

    func testEntryDecoderConvertsRateAndChannels() throws {
        // One second of mono 48 kHz becomes one second of stereo 44.1 kHz with the same pitch.
        let url = directory.appendingPathComponent("tone48.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 441, frames: 48_000, sampleRate: 48_000, channels: 1),
                           sampleRate: 48_000, channels: 1)
        let entry = AudioEntry(token: .init(rawValue: 1), path: url.path)
        let decoder = try EntryDecoder(entry: entry, streamRate: 44_100, streamChannels: 2, chunkFrames: 4_096)
        var samples: [Float] = []
        while !decoder.isFinished { samples += try decoder.nextChunk() }
        XCTAssertEqual(samples.count / 2, 44_100, "rate conversion keeps the duration to the frame")
        XCTAssertEqual(decoder.entryFrame, 44_100)
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        XCTAssertEqual(left, right, "mono is duplicated to both channels")
        let crossings = zip(left, left.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        XCTAssertEqual(Double(crossings), 441, accuracy: 2)
    }

    func testEntryDecoderHonoursStartAndEndTimes() throws {
        let url = directory.appendingPathComponent("sweep.flac")
        let signal = TestSignal.sweep(frames: 44_100)
        try writeAudioFile(url, signal)
        let entry = AudioEntry(token: .init(rawValue: 1), path: url.path, startTime: 0.25, endTime: 0.5)
        let decoder = try EntryDecoder(entry: entry, streamRate: 44_100, streamChannels: 2, chunkFrames: 1_000)
        var samples: [Float] = []
        while !decoder.isFinished { samples += try decoder.nextChunk() }
        XCTAssertEqual(samples, Array(signal[11_025 * 2 ..< 22_050 * 2]))
    }

    /// A decoder kept after reading a file's tags is the one the next open of that file gets —
    /// once, and only while the file is unchanged and the decoder at its first frame.
    func testAKeptDecoderIsReusedOnceForTheSameUnchangedFile() throws {
        let signal = TestSignal.sweep(frames: 4_000)
        let url = directory.appendingPathComponent("kept.wav")
        let other = directory.appendingPathComponent("other.wav")
        try writeAudioFile(url, signal)
        try writeAudioFile(other, signal)

        let kept = try AudioFileDecoder(path: url.path)
        kept.keepForReuse()
        XCTAssertFalse(try AudioFileDecoder.open(path: other.path) === kept, "another file")
        kept.keepForReuse()
        let reopened = try AudioFileDecoder.open(path: url.path)
        XCTAssertTrue(reopened === kept, "the same file: the kept decoder")
        XCTAssertFalse(try AudioFileDecoder.open(path: url.path) === kept, "taken once")
        XCTAssertEqual(try decodeRest(reopened), signal, "it reads from the first frame")

        let changed = try AudioFileDecoder(path: url.path)
        changed.keepForReuse()
        try writeAudioFile(url, Array(signal.prefix(2_000)))  // rewritten since it was opened
        let afterChange = try AudioFileDecoder.open(path: url.path)
        XCTAssertFalse(afterChange === changed)
        XCTAssertEqual(afterChange.info.frameCount, 1_000)

        let read = try AudioFileDecoder(path: url.path)
        _ = try decodeRest(read, frameLimit: 10)
        read.keepForReuse()  // past its first frame: not kept
        XCTAssertFalse(try AudioFileDecoder.open(path: url.path) === read)
    }
}
