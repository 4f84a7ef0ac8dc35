import AudioEngine
import Foundation
import Synchronization

/// Records a PulseAudio monitor source in real time (through `parec`) and timestamps every
/// chunk on arrival with CLOCK_MONOTONIC, the clock PulseAudio uses.
///
/// An event's time is the arrival time of the chunk that carried it: counting frames from the
/// start of the recording is not a clock, because the sink renders ahead and rewinds when a
/// stream starts or is flushed. Keep one recorder running for all measurements, warmed up
/// (`warmUp()`), since the null sink starts with a 2 s block that the recorder's latency
/// request then shrinks.
///
/// Used by the real-time tests and the benchmarks; not part of the product.
public final class MonitorRecorder: @unchecked Sendable {
    // @unchecked: `chunks` is behind `lock`; the process and thread are set once in init.
    public struct Chunk: Sendable {
        /// CLOCK_MONOTONIC nanoseconds when the chunk arrived.
        public let arrivalNanoseconds: UInt64
        /// Index of the chunk's first frame in the whole recording.
        public let firstFrame: Int
        /// Interleaved stereo S16 samples.
        public let samples: [Int16]
    }

    public let source: String
    public let sampleRate: Int
    public let latencyMilliseconds: Int
    private let process = Process()
    private let lock = NSLock()
    private var chunks: [Chunk] = []
    private var framesRecorded = 0
    private var reader: Thread?

    /// Starts `parec` on `source` (e.g. `musickit_test.monitor`) at 44.1 kHz stereo S16.
    public init(source: String, sampleRate: Int = 44_100, latencyMilliseconds: Int = 2) throws {
        self.source = source
        self.sampleRate = sampleRate
        self.latencyMilliseconds = latencyMilliseconds
        process.executableURL = URL(fileURLWithPath: "/usr/bin/parec")
        process.arguments = ["--latency-msec=\(latencyMilliseconds)", "-d", source, "--format=s16le",
                             "--rate=\(sampleRate)", "--channels=2", "--raw"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = pipe.fileHandleForReading
        let thread = Thread { [weak self] in
            let descriptor = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 4_096)
            var carry: [UInt8] = []
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                let now = monotonicNanoseconds()
                if count <= 0 { break }
                carry += buffer[0..<count]
                let usable = carry.count / 4 * 4
                guard usable > 0, let self else { continue }
                let samples = carry[0..<usable].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
                carry.removeFirst(usable)
                self.lock.lock()
                self.chunks.append(Chunk(arrivalNanoseconds: now, firstFrame: self.framesRecorded, samples: samples))
                self.framesRecorded += samples.count / 2
                self.lock.unlock()
            }
        }
        thread.stackSize = 1 << 20
        reader = thread
        thread.start()
    }

    deinit { stop() }

    /// Stops `parec` (by its PID).
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Records for `seconds` (default 2.5 s) so the sink settles on the recorder's block size.
    public func warmUp(seconds: Double = 2.5) {
        Thread.sleep(forTimeInterval: seconds)
    }

    /// Chunks that arrived after `nanoseconds`.
    public func chunks(arrivedAfter nanoseconds: UInt64) -> [Chunk] {
        lock.lock()
        defer { lock.unlock() }
        // Chunks arrive in order: search from the end.
        var index = chunks.count
        while index > 0 && chunks[index - 1].arrivalNanoseconds > nanoseconds { index -= 1 }
        return Array(chunks[index...])
    }

    /// The arrival time of the first chunk after `nanoseconds` holding a sample louder than
    /// `threshold`, waiting up to `timeout` seconds for it.
    public func firstSound(after nanoseconds: UInt64, threshold: Int16 = 1_000,
                           timeout: Double = 2) -> (arrivalNanoseconds: UInt64, frame: Int)? {
        let deadline = monotonicNanoseconds() + UInt64(timeout * 1e9)
        var checked = nanoseconds
        while monotonicNanoseconds() < deadline {
            for chunk in chunks(arrivedAfter: checked) {
                checked = chunk.arrivalNanoseconds
                if let index = chunk.samples.firstIndex(where: { abs(Int($0)) > Int(threshold) }) {
                    return (chunk.arrivalNanoseconds, chunk.firstFrame + index / 2)
                }
            }
            usleep(200)
        }
        return nil
    }

    /// The samples recorded from `nanoseconds` on (interleaved stereo), waiting `seconds` first.
    public func samples(after nanoseconds: UInt64) -> [Int16] {
        chunks(arrivedAfter: nanoseconds).flatMap(\.samples)
    }
}

/// Measures in a recording.
public enum SignalAnalysis {
    /// The longest run of frames where both channels stay within `threshold` of zero, between
    /// the first and the last frame louder than it.
    public static func longestQuietRun(_ samples: [Int16], threshold: Int16 = 64) -> Int {
        let frames = samples.count / 2
        func loud(_ frame: Int) -> Bool {
            abs(Int(samples[frame * 2])) > Int(threshold) || abs(Int(samples[frame * 2 + 1])) > Int(threshold)
        }
        guard let first = (0..<frames).first(where: loud), let last = (0..<frames).last(where: loud) else { return 0 }
        var longest = 0
        var run = 0
        for frame in first...last {
            if loud(frame) { run = 0 } else { run += 1; longest = max(longest, run) }
        }
        return longest
    }

    /// Rising zero crossings per second of the left channel: the frequency of a tone.
    public static func frequency(_ samples: [Int16], sampleRate: Int) -> Double {
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        guard left.count > 1 else { return 0 }
        let crossings = zip(left, left.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        return Double(crossings) * Double(sampleRate) / Double(left.count)
    }
}

/// Median, minimum and maximum of repeated measurements.
public struct Summary: Sendable {
    public let median: Double
    public let minimum: Double
    public let maximum: Double
    public let count: Int

    public init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        median = sorted.count % 2 == 1 ? sorted[sorted.count / 2]
            : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        minimum = sorted[0]
        maximum = sorted[sorted.count - 1]
        count = sorted.count
    }

    /// The value at quantile `q` (0...1) of `values`.
    public static func quantile(_ values: [Double], _ q: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let position = min(sorted.count - 1, max(0, Int((Double(sorted.count - 1) * q).rounded())))
        return sorted[position]
    }
}

extension MonitorRecorder {
    /// The time (monotonic ns) at which frame `frame` of `chunk` was heard: the chunk's last
    /// frame arrived with it, the frames before it one sample period apart.
    public func time(ofFrame frame: Int, in chunk: Chunk) -> Double {
        Double(chunk.arrivalNanoseconds) - Double(chunk.samples.count / 2 - 1 - frame) * 1e9 / Double(sampleRate)
    }

    /// When each click after `nanoseconds` was heard (monotonic ns): its first frame louder than
    /// `threshold`; louder frames within 50 ms of a click belong to it.
    public func clickTimes(after nanoseconds: UInt64, threshold: Int16 = 12_000) -> [Double] {
        var times: [Double] = []
        for chunk in chunks(arrivedAfter: nanoseconds) {
            for frame in 0..<(chunk.samples.count / 2) where abs(Int(chunk.samples[frame * 2])) > Int(threshold) {
                let time = time(ofFrame: frame, in: chunk)
                if let last = times.last, time - last < 50e6 { continue }
                times.append(time)
            }
        }
        return times
    }

    /// When the sound first turned loud (a frame above 1,000) or quiet (the first of 20 frames
    /// below 50: a tone passes zero in a frame) after `nanoseconds`, in ms after it.
    public func levelChange(after nanoseconds: UInt64, toLoud loud: Bool) -> Double? {
        for chunk in chunks(arrivedAfter: nanoseconds) {
            let frames = chunk.samples.count / 2
            func level(_ frame: Int) -> Int { abs(Int(chunk.samples[frame * 2])) }
            let matching = (0..<frames).first { frame in
                loud ? level(frame) > 1_000 : frame + 20 <= frames && (frame..<frame + 20).allSatisfy { level($0) < 50 }
            }
            if let frame = matching { return (time(ofFrame: frame, in: chunk) - Double(nanoseconds)) / 1e6 }
        }
        return nil
    }

    /// Each of `times` against the nearest of `reference` (both monotonic ns), in ms (later is
    /// positive); times with none within 100 ms are left out.
    public static func offsets(_ times: [Double], against reference: [Double]) -> [Double] {
        times.compactMap { time in
            guard let nearest = reference.min(by: { abs($0 - time) < abs($1 - time) }), abs(nearest - time) < 100e6 else { return nil }
            return (time - nearest) / 1e6
        }
    }
}
