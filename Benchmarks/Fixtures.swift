import AudioEngine
import AudioMeasurement
import Foundation

/// Test signals written once per run: they start at full scale (a sweep), so the first
/// non-silent frame at the monitor is the first frame of the file, not a fade-in.
struct Fixtures {
    let directory: URL
    /// 3 s full-scale sweep.
    let sweep: URL
    /// 10 s of digital silence: the entry a skip leaves (the next one is `sweep`).
    let silence: URL
    /// One continuous 1 s sweep cut at frame 22,051 into two files, and the unsplit signal.
    let gaplessFirst: URL
    let gaplessSecond: URL
    let gaplessSignal: [Int16]
    static let gaplessCut = 22_051
    /// 12 s of a real recording for the CPU runs.
    let music: URL
    /// The sweep as the 16-bit samples a device receives: what a start must be heard as.
    let sweepSamples: [Int16]
    /// 2 s of digital silence then the sweep: a seek from the silence to 2 s is heard at once.
    let silenceThenSweep: URL
    let silenceThenSweepSamples: [Int16]
    static let silenceThenSweepSeekFrame = 2 * 44_100
    /// 60 s of a continuous sweep for the load run: any dropped or inserted frame shows.
    let longSweep: URL
    let longSweepSamples: [Int16]

    init(assets: URL) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-bench-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        sweep = directory.appendingPathComponent("sweep.wav")
        silence = directory.appendingPathComponent("silence.wav")
        gaplessFirst = directory.appendingPathComponent("gapless-1.wav")
        gaplessSecond = directory.appendingPathComponent("gapless-2.wav")
        music = directory.appendingPathComponent("music.flac")

        let sweepSignal = Fixtures.sweepSignal(frames: 3 * 44_100)
        try Fixtures.write(sweep, sweepSignal)
        sweepSamples = pcm16(sweepSignal)
        silenceThenSweep = directory.appendingPathComponent("silence-then-sweep.wav")
        let silenceThenSweepSignal = [Float](repeating: 0, count: Fixtures.silenceThenSweepSeekFrame * 2) + sweepSignal
        try Fixtures.write(silenceThenSweep, silenceThenSweepSignal)
        silenceThenSweepSamples = pcm16(silenceThenSweepSignal)
        longSweep = directory.appendingPathComponent("long-sweep.wav")
        let longSignal = Fixtures.sweepSignal(frames: 60 * 44_100, startHz: 100, endHz: 8_000)
        try Fixtures.write(longSweep, longSignal)
        longSweepSamples = pcm16(longSignal)
        try Fixtures.write(silence, [Float](repeating: 0, count: 10 * 44_100 * 2))
        let continuous = Fixtures.sweepSignal(frames: 44_100, startHz: 300, endHz: 2_500)
        try Fixtures.write(gaplessFirst, Array(continuous[..<(Fixtures.gaplessCut * 2)]))
        try Fixtures.write(gaplessSecond, Array(continuous[(Fixtures.gaplessCut * 2)...]))
        gaplessSignal = pcm16(continuous)

        // 12 s of a bundled preview (Maxstack, "A New Journey"), as lossless FLAC.
        let preview = assets.appendingPathComponent("Previews/mx-ar-01.ogg").path
        let samples = try Fixtures.decode(preview, seconds: 12)
        try Fixtures.write(music, samples, format: .flac16)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    static func sweepSignal(frames: Int, startHz: Double = 200, endHz: Double = 6_000) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * 2)
        var phase = 0.0
        for frame in 0..<frames {
            let hz = startHz + (endHz - startHz) * Double(frame) / Double(frames)
            phase += 2 * Double.pi * hz / 44_100
            // Starts at a peak (cos), full scale at once.
            samples[frame * 2] = Float((0.9 * cos(phase) * 32_768).rounded() / 32_768)
            samples[frame * 2 + 1] = Float((0.9 * cos(phase + 0.5) * 32_768).rounded() / 32_768)
        }
        return samples
    }

    static func write(_ url: URL, _ samples: [Float], format: AudioFileWriter.Format = .wav16,
                      sampleRate: Int = 44_100) throws {
        let writer = try AudioFileWriter(path: url.path, format: format, sampleRate: sampleRate, channelCount: 2)
        try writer.write(samples)
        try writer.close()
    }

    /// Decodes up to `seconds` of `path` as stereo at `rate`.
    static func decode(_ path: String, seconds: Double, rate: Int = 44_100) throws -> [Float] {
        let entry = AudioEntry(token: .init(rawValue: 1), path: path, endTime: seconds)
        let decoder = try EntryDecoder(entry: entry, streamRate: rate, streamChannels: 2, chunkFrames: 4_096)
        var samples: [Float] = []
        while !decoder.isFinished { samples += try decoder.nextChunk() }
        return samples
    }
}

extension Process {
    /// `executable` with `arguments`, its standard input and output on /dev/null, not yet run
    /// (a start timed from outside is timed just before `run()`); `environment` nil: this one's.
    static func quiet(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        return process
    }
}
