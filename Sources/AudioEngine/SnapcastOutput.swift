import CLinux
import Glibc

// Snapcast (multi-room audio: a server that timestamps a stream, clients in every room that play
// it in sync) as an output: `snapcast:PATH[?rate=HZ&buffer=MS]` writes 16-bit stereo PCM into
// the FIFO that snapserver's pipe source reads (`source = pipe:///PATH?name=…&sampleformat=HZ:16:2`),
// as MPD's and Mopidy's Snapcast setups do. Not its TCP source: there what snapserver has taken
// into its socket's receive buffer (up to hundreds of KiB, sized by the kernel on its side) is
// neither visible to the engine nor taken back, so an entry would be announced, and a skip heard,
// that much late; snapserver runs beside the player and its clients reach it across the network.

/// Snapcast's pipe source, paced by the server: snapserver reads the FIFO a chunk (20 ms) at a
/// time in real time, so the engine writes as the pipe has room. The pipe is kept small (16 KiB,
/// ~90 ms at 44.1 kHz), since what is in it cannot be taken back: a skip or a pause drops only
/// what the engine holds, and is heard after what the pipe holds plus Snapcast's buffer.
///
/// Frames written before `start()` wait in a buffer of the output's own (a FIFO cannot hold them
/// back from its reader). `delayFrames()` counts the pipe and Snapcast's buffer (`buffer=`,
/// 1,000 ms unless the name says, as snapserver's `stream.buffer`), so the engine announces an
/// entry when the rooms play it. The server reading nothing for 3 s (it stopped, or was never
/// started) ends in an error: the pipe stays full.
///
/// Thread safety: as `AudioOutput`. Real-time safety: the operations are non-blocking system
/// calls on the FIFO (`write`, `ioctl(FIONREAD)`) and copies into memory allocated at open.
final class SnapcastPipeOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: the audio thread alone uses it after open (AudioOutput's contract).
    let name: String
    let configuration: PCMConfiguration
    let capabilities: AudioOutputCapabilities = [.realTimeClock]
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollDescriptorCount = 1

    private let path: String
    private let descriptor: Int32
    private let pipeBytes: Int
    private let bytesPerFrame: Int
    /// Snapcast's buffer in frames: how long after snapserver reads a frame the rooms play it
    /// (a client plays a chunk at its read time plus the buffer, its own latency taken off).
    private let serverLatencyFrames: Int
    /// Frames written before `start()`.
    private let staging: UnsafeMutableRawPointer
    private let stagingCapacity: Int
    private var stagedBytes = 0
    /// The bytes of a frame the pipe took only part of, to be written first next time.
    private let carry: UnsafeMutableRawPointer
    private var carryBytes = 0
    private var started = false
    /// Frames given to the pipe since the last start, for `delayFrames` (never more than that).
    private var framesSinceStart = 0
    /// When the pipe was last seen full with nothing read from it since (monotonic ns).
    private var fullSince: UInt64?
    private var lastQueuedBytes = 0

    /// Snapcast's defaults: `stream.buffer` 1,000 ms, 48 kHz.
    static let defaultBufferMilliseconds = 1_000
    static let defaultSampleRate = 48_000
    /// How long the server may read nothing from a full pipe before the output fails.
    static let stalledNanoseconds: UInt64 = 3_000_000_000

    static func isSnapcastName(_ name: String) -> Bool { name.hasPrefix("snapcast:") }

    init(name: String, request: PCMRequest) throws(AudioOutputError) {
        self.name = name
        var rest = String(name.dropFirst("snapcast:".count))
        var options: [String: Int] = [:]
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, ["rate", "buffer"].contains(parts[0]), let value = Int(parts[1]), value > 0 else {
                    throw .other(device: name, message: "unknown option '\(pair)': snapcast:PATH takes ?rate=HZ&buffer=MS")
                }
                options[parts[0]] = value
            }
            rest = String(rest[..<question])
        }
        guard rest.hasPrefix("/") else {
            throw .other(device: name, message: "give the path of snapserver's pipe source, snapcast:/PATH (TCP sources are not supported)")
        }
        path = rest
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw .other(device: name, message: "\(path): \(String(cString: strerror(errno))) (is snapserver's pipe source there?)")
        }
        guard status.st_mode & S_IFMT == S_IFIFO else {
            throw .other(device: name, message: "\(path) is not a FIFO (snapserver's pipe source makes one with mode=create)")
        }
        // Read-write, as Linux allows for a FIFO: the open neither waits for a reader nor fails
        // without one, and snapserver, which reopens its pipe after an end of file, never sees
        // one while this output is open (between two songs, a pause). A server that is not there
        // shows as a pipe that stays full (`availableFrames`), and no SIGPIPE can come.
        let opened = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard opened >= 0 else {
            throw .other(device: name, message: "\(path): \(String(cString: strerror(errno)))")
        }
        descriptor = opened
        // As small as useful, since what the pipe holds plays even after a skip. Not 8 KiB: the
        // skip then came 7 ms after MPD's instead of ~50, but the pipe ran dry in one of three
        // album runs (the engine's refill of half of it is then due within one 20 ms chunk).
        _ = fcntl(opened, musickit_F_SETPIPE_SZ, Int32(16_384))
        let size = fcntl(opened, musickit_F_GETPIPE_SZ)
        pipeBytes = size > 0 ? Int(size) : 65_536
        let rate = options["rate"] ?? Self.defaultSampleRate
        bytesPerFrame = 2 * PCMSampleFormat.int16.bytesPerSample
        serverLatencyFrames = (options["buffer"] ?? Self.defaultBufferMilliseconds) * rate / 1_000
        let pipeFrames = pipeBytes / bytesPerFrame
        // The engine's period: half the pipe, so it wakes ~20 times a second at 44.1 kHz. Its
        // buffer: the pipe and Snapcast's buffer, what lies between a write and the rooms, so
        // that at the queue's end the engine writes silence until the end is heard (the pipe
        // never runs dry meanwhile) and counts that much as queued.
        configuration = PCMConfiguration(sampleRate: rate, channelCount: 2, sampleFormat: .int16,
                                          periodSizeInFrames: max(1, pipeFrames / 2),
                                          bufferSizeInFrames: pipeFrames + serverLatencyFrames, canPause: false)
        stagingCapacity = (pipeFrames + serverLatencyFrames) * bytesPerFrame
        staging = .allocate(byteCount: stagingCapacity, alignment: 16)
        carry = .allocate(byteCount: bytesPerFrame, alignment: 16)
        pollDescriptors = .allocate(capacity: 2)
        pollDescriptors.initialize(repeating: pollfd(), count: 2)
        pollDescriptors[0] = pollfd(fd: opened, events: Int16(POLLOUT), revents: 0)
    }

    deinit {
        staging.deallocate()
        carry.deallocate()
        pollDescriptors.deallocate()
    }

    /// Bytes in the pipe that snapserver has not read.
    private func queuedBytes() -> Int {
        var queued: Int32 = 0
        return ioctl(descriptor, UInt(FIONREAD), &queued) == 0 ? Int(queued) : 0
    }

    func availableFrames() -> Int {
        guard started else { return (stagingCapacity - stagedBytes) / bytesPerFrame }
        let queued = queuedBytes()
        if queued == 0 && framesSinceStart > 0 { return -Int(EPIPE) }  // the server read everything: ran dry
        // The server reads nothing from a full pipe: it has stopped (or hangs).
        if queued + bytesPerFrame > pipeBytes {
            let now = monotonicNanoseconds()
            if let since = fullSince, queued >= lastQueuedBytes {
                if now - since > Self.stalledNanoseconds { return -Int(EIO) }
            } else {
                fullSince = now
            }
        } else {
            fullSince = nil
        }
        lastQueuedBytes = queued
        return max(0, pipeBytes - queued - carryBytes - stagedBytes) / bytesPerFrame
    }

    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int {
        guard started else {
            let frames = min(frameCount, (stagingCapacity - stagedBytes) / bytesPerFrame)
            guard frames > 0 else { return -Int(EAGAIN) }
            (staging + stagedBytes).copyMemory(from: bytes, byteCount: frames * bytesPerFrame)
            stagedBytes += frames * bytesPerFrame
            return frames
        }
        if stagedBytes > 0 {
            let left = flushStaging()
            if left < 0 { return -Int(EIO) }
            if left > 0 { return -Int(EAGAIN) }
        }
        if carryBytes > 0 {
            let written = Glibc.write(descriptor, carry + (bytesPerFrame - carryBytes), carryBytes)
            if written < 0 { return errno == EAGAIN ? -Int(EAGAIN) : -Int(EIO) }
            carryBytes -= written
            if carryBytes > 0 { return -Int(EAGAIN) }
        }
        let written = Glibc.write(descriptor, bytes, frameCount * bytesPerFrame)
        if written < 0 { return errno == EAGAIN ? -Int(EAGAIN) : -Int(EIO) }
        // A frame the pipe took only part of: its rest goes first next time, and it counts as written.
        var frames = written / bytesPerFrame
        let partial = written % bytesPerFrame
        if partial > 0 {
            carry.copyMemory(from: bytes + frames * bytesPerFrame, byteCount: bytesPerFrame)
            carryBytes = bytesPerFrame - partial
            frames += 1
        }
        framesSinceStart += frames
        return frames
    }

    func delayFrames() -> Int {
        guard started else { return stagedBytes / bytesPerFrame }
        return min((queuedBytes() + carryBytes + stagedBytes) / bytesPerFrame + serverLatencyFrames, framesSinceStart + stagedBytes / bytesPerFrame)
    }

    func start() -> Int32 {
        guard !started else { return 0 }
        started = true
        framesSinceStart = 0
        fullSince = nil
        return flushStaging() < 0 ? -EIO : 0
    }

    /// Writes what was staged before the start, as much as the pipe takes (after a drop it may
    /// still hold what was written before; `write` writes the rest before its own frames).
    /// Returns the staged bytes left, or -1 when the pipe failed.
    private func flushStaging() -> Int {
        var offset = 0
        while offset < stagedBytes {
            let written = Glibc.write(descriptor, staging + offset, stagedBytes - offset)
            if written < 0 {
                if errno == EAGAIN { break }
                return -1
            }
            offset += written
        }
        framesSinceStart += offset / bytesPerFrame
        if offset > 0 && offset < stagedBytes { staging.copyMemory(from: staging + offset, byteCount: stagedBytes - offset) }
        stagedBytes -= offset
        return stagedBytes
    }

    /// Stops writing; what the pipe holds still plays (a FIFO cannot take it back).
    func drop() -> Int32 {
        started = false
        stagedBytes = 0
        carryBytes = 0
        framesSinceStart = 0
        fullSince = nil
        return 0
    }

    func prepare() -> Int32 { drop() }

    func pause(_ enable: Bool) -> Int32 { -ENOSYS }  // no `.pause`: the engine drops and writes again

    func recover(from error: Int32) -> Int32 {
        guard error == -EPIPE else { return error }
        return drop()
    }

    func failure(_ operation: DeviceOperation, code: Int32) -> AudioOutputError {
        let message = code == -EIO
            ? "the Snapcast server stopped reading \(path) (is snapserver still running?)"
            : "\(operation) on \(path) failed: \(String(cString: strerror(-code)))"
        return .other(device: name, message: message)
    }

    func close() { _ = Glibc.close(descriptor) }
}
