import CLinux
import Glibc

/// A Linux eventfd used to wake a thread that sleeps in `poll`.
///
/// Thread safety: `signal` from any thread; `drain` by the thread that polls it.
/// Real-time safety: `signal` and `drain` are one non-blocking `write`/`read` system call on a
/// counter in kernel memory (no file, no lock, no allocation).
final class WakeSignal: Sendable {
    let descriptor: Int32

    init() {
        descriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(descriptor >= 0, "eventfd failed: \(String(cString: strerror(errno)))")
    }

    deinit { close(descriptor) }

    @inline(__always)
    func signal() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    @inline(__always)
    func drain() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, MemoryLayout<UInt64>.size)
    }

    /// Sleeps until signalled or `timeoutMilliseconds` passed (-1: no timeout).
    func wait(timeoutMilliseconds: Int32) {
        var descriptorSet = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptorSet, 1, timeoutMilliseconds)
        drain()
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock PulseAudio uses too, so benchmark timestamps
/// taken here compare with its timing.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
