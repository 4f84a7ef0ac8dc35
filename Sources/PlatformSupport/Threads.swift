import CLinux
import Glibc

/// A joinable POSIX thread running one closure.
package final class PlatformThread: @unchecked Sendable {
    // @unchecked: `thread` is written once before `start` returns and read by `join` afterwards.
    private var thread = pthread_t()
    private let name: String

    private final class Context {
        let name: String
        let body: () -> Void
        /// The CPUs the thread may use once it runs, when it was started on fewer.
        var allowedCPUs: cpu_set_t?
        init(name: String, body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    /// Starts `body` on a new thread called `name` (at most 15 characters are kept).
    ///
    /// `startsOnAnotherCPU`: for a thread whose creator goes on working, the thread starts on
    /// another CPU than the creator's when it may use one, and may then run anywhere the creator
    /// may. Linux puts a new thread on its creator's CPU, and while the creator keeps running
    /// there the thread waits until the scheduler moves it (milliseconds on a two-CPU machine,
    /// Benchmarks/RESULTS.md) — the device that `musickit play`
    /// opens beside its other start-up work was heard that much later. Not the default: until
    /// it first runs, such a thread cannot use its creator's CPU, so real-time threads holding
    /// every other CPU would hold it back.
    package init(name: String, startsOnAnotherCPU: Bool = false, body: @escaping @Sendable () -> Void) {
        self.name = name
        let context = Context(name: name, body: body)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        var allowed = cpu_set_t()
        if startsOnAnotherCPU, sched_getaffinity(0, MemoryLayout<cpu_set_t>.size, &allowed) == 0,
           var starting = PlatformThread.startingCPUs(allowed: allowed, current: sched_getcpu()),
           pthread_attr_setaffinity_np(&attributes, MemoryLayout<cpu_set_t>.size, &starting) == 0 {
            context.allowedCPUs = allowed
        }
        let retained = Unmanaged.passRetained(context).toOpaque()
        let result = pthread_create(&thread, &attributes, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            if var allowed = context.allowedCPUs { _ = sched_setaffinity(0, MemoryLayout<cpu_set_t>.size, &allowed) }
            _ = pthread_setname_np(pthread_self(), String(context.name.prefix(15)))
            context.body()
            return nil
        }, retained)
        precondition(result == 0, "pthread_create failed: \(String(cString: strerror(result)))")
    }

    /// The CPUs a new thread starts on: those of `allowed` but `current`, the creator's; nil
    /// (start anywhere) when that leaves none or the creator's CPU is unknown.
    package static func startingCPUs(allowed: cpu_set_t, current: Int32) -> cpu_set_t? {
        guard current >= 0 else { return nil }
        var others = allowed
        musickit_cpu_clear(current, &others)
        return musickit_cpu_count(&others) > 0 ? others : nil
    }

    package func join() {
        pthread_join(thread, nil)
    }

    /// Lets the thread end on its own, without a `join`.
    package func detach() {
        pthread_detach(thread)
    }

    /// Starts `body` on a new thread called `name` that ends on its own: the one way this
    /// package starts a thread it does not join (named, so that `top -H` and a debugger say
    /// whose it is).
    package static func detached(name: String, startsOnAnotherCPU: Bool = false, body: @escaping @Sendable () -> Void) {
        PlatformThread(name: name, startsOnAnotherCPU: startsOnAnotherCPU, body: body).detach()
    }

    /// Asks for SCHED_FIFO at `priority` for the calling thread. Returns false (and changes
    /// nothing) when refused, e.g. without CAP_SYS_NICE or an rtprio limit.
    package static func requestRealtimePriority(_ priority: Int32) -> Bool {
        var parameters = sched_param()
        parameters.sched_priority = priority
        return pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0
    }
}
