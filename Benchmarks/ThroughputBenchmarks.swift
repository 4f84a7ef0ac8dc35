import AudioEngine
import AudioMeasurement
import Foundation

/// Work without a clock to wait for: the ring buffer against memcpy, decoding per format.
struct ThroughputBenchmarks {
    let fixtures: Fixtures
    let runs: Int
    let report: Report

    /// Moves 256-frame stereo periods (2 KiB of Float) through the ring, one thread writing
    /// and one reading, against memcpy of the same bytes on one thread.
    func ringBuffer() {
        let periodSamples = 512
        let totalSamples = 64 * 1_024 * 1_024  // 256 MiB of Float
        var ringValues: [Double] = []
        var memcpyValues: [Double] = []
        for _ in 0..<runs {
            let handles = RingBuffer<Float>.make(capacity: 65_536 * 2)
            let producerBox = ProducerBox(handles.producer)
            var consumer = handles.consumer
            let source = [Float](repeating: 0.5, count: periodSamples)
            var destination = [Float](repeating: 0, count: periodSamples)
            let start = monotonicNanoseconds()
            let writer = Thread {
                var producer = producerBox.take()
                var written = 0
                source.withUnsafeBufferPointer { buffer in
                    while written < totalSamples {
                        written += producer.write(from: buffer)
                    }
                }
            }
            writer.start()
            var read = 0
            destination.withUnsafeMutableBufferPointer { buffer in
                while read < totalSamples {
                    read += consumer.read(into: buffer)
                }
            }
            let seconds = Double(monotonicNanoseconds() - start) / 1e9
            ringValues.append(Double(totalSamples * 4) / seconds / 1e9)

            let memcpyStart = monotonicNanoseconds()
            source.withUnsafeBytes { from in
                destination.withUnsafeMutableBytes { to in
                    for _ in 0..<(totalSamples / periodSamples) {
                        memcpy(to.baseAddress!, from.baseAddress!, from.count)
                        blackHole(to.baseAddress!)
                    }
                }
            }
            let memcpySeconds = Double(monotonicNanoseconds() - memcpyStart) / 1e9
            memcpyValues.append(Double(totalSamples * 4) / memcpySeconds / 1e9)
        }
        report.add(Row("ring buffer throughput, 2 threads, 2 KiB chunks", unit: "GB/s", values: ringValues))
        report.add(Row("memcpy of the same chunks, 1 thread", unit: "GB/s", values: memcpyValues,
                       note: "ring / memcpy = \(format((Summary(ringValues)?.median ?? 0) / (Summary(memcpyValues)?.median ?? 1)))"))
    }

    /// Decodes the same 12 s of music from each format at the file's own rate (Opus is 48 kHz
    /// only, so its file is 48 kHz; conversion is measured on its own below).
    func decoding() throws {
        let samples = try Fixtures.decode(fixtures.music.path, seconds: 12)
        let samples48 = try Fixtures.decode(fixtures.music.path, seconds: 12, rate: 48_000)
        let formats: [(String, AudioFileWriter.Format, Int)] = [
            ("WAV", .wav16, 44_100), ("FLAC", .flac16, 44_100), ("Ogg Vorbis", .oggVorbis(quality: 0.5), 44_100),
            ("Opus", .opus(quality: 0.5), 48_000), ("MP3", .mp3(quality: 0.5), 44_100),
        ]
        func measure(_ name: String, _ url: URL, rate: Int) throws {
            var factors: [Double] = []
            for _ in 0..<runs {
                let start = monotonicNanoseconds()
                let decoder = try EntryDecoder(entry: AudioEntry(token: .init(rawValue: 1), path: url.path),
                                               streamRate: rate, streamChannels: 2)
                var frames = 0
                while !decoder.isFinished { frames += try decoder.nextChunk().count / 2 }
                let seconds = Double(monotonicNanoseconds() - start) / 1e9
                factors.append(Double(frames) / Double(rate) / seconds)
            }
            report.add(Row("decode \(name)", unit: "x realtime", values: factors,
                           note: "12 s of music at \(rate / 1000).\(rate % 1000 / 100) kHz, open + decode, one core"))
        }
        for (name, format, rate) in formats {
            let url = fixtures.directory.appendingPathComponent("decode.\(name.lowercased().replacingOccurrences(of: " ", with: "-"))")
            try Fixtures.write(url, rate == 48_000 ? samples48 : samples, format: format, sampleRate: rate)
            try measure(name, url, rate: rate)
        }
        // MP4 through FFmpeg, made from the WAV by Debian's ffmpeg.
        for (name, codec) in [("AAC (MP4)", "aac"), ("ALAC (MP4)", "alac")] {
            let url = fixtures.directory.appendingPathComponent("decode-\(codec).m4a")
            try encodeWithFFmpeg(fixtures.directory.appendingPathComponent("decode.wav"), to: url, codec: codec)
            try measure(name, url, rate: 44_100)
        }
        // Sample-rate conversion on top: the same FLAC at 48 kHz into a 44.1 kHz stream.
        let url48 = fixtures.directory.appendingPathComponent("decode-48k.flac")
        try Fixtures.write(url48, samples48, format: .flac16, sampleRate: 48_000)
        var factors: [Double] = []
        for _ in 0..<runs {
            let start = monotonicNanoseconds()
            let decoder = try EntryDecoder(entry: AudioEntry(token: .init(rawValue: 1), path: url48.path),
                                           streamRate: 44_100, streamChannels: 2)
            var frames = 0
            while !decoder.isFinished { frames += try decoder.nextChunk().count / 2 }
            factors.append(Double(frames) / 44_100 / (Double(monotonicNanoseconds() - start) / 1e9))
        }
        report.add(Row("decode FLAC 48 kHz + convert to 44.1 kHz (soxr HQ)", unit: "x realtime", values: factors))
    }
}

/// Moves the producer handle into the writer thread.
final class ProducerBox: @unchecked Sendable {
    private var producer: RingBuffer<Float>.Producer?
    init(_ producer: consuming RingBuffer<Float>.Producer) { self.producer = consume producer }
    func take() -> RingBuffer<Float>.Producer { producer.take()! }
}

/// Keeps the optimizer from dropping a copy nobody reads.
@inline(never)
func blackHole(_ pointer: UnsafeMutableRawPointer) {
    _ = pointer.load(as: UInt8.self)
}
