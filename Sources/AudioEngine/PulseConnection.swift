import PlatformSupport
import CPulse
import Glibc
import Synchronization

/// A connection to a PulseAudio (or PipeWire) server: libpulse's threaded main loop, which runs
/// the connection on a thread of its own, and a context on it, connected. Each `PulseStream` has
/// one; the first may adopt one the program began before the engine existed
/// (`begunConnection`).
///
/// Threading: every call on the context and its streams is made with the loop's lock held
/// (`lock()`), and libpulse's callbacks run on its thread with the lock held. `stopLoop()`
/// joins that thread: no callback runs after it. The owner keeps this object alive until then
/// (callbacks reach it unretained).
final class PulseConnection: @unchecked Sendable {
    // @unchecked: `askedForPriority` is only touched on libpulse's thread; the rest is set in init
    // or changed under the loop's lock.
    let library: LibPulse
    let mainloop: LibPulse.Mainloop
    let context: LibPulse.Context
    let deviceName: String
    /// The priority asked for libpulse's thread, which sends the frames to the server: the audio
    /// thread's, so that load at normal priority cannot hold the frames back (60 s under
    /// `stress-ng`: 42 xruns against 79 without it, one run each — on a VM whose host took 14% of
    /// its time then, so not a clean measure).
    private let realtimePriority: Int32?
    private var askedForPriority = false
    private var isLoopStopped = false
    private var isClosed = false
    /// Wakes `waitWhileOpening` every 50 ms while it waits on a thread that may give up
    /// (`AbandonableWaits`); armed only then. Under the loop's lock.
    private var openingTicker: LibPulse.TimeEvent?
    private var openingWaiters = 0

    /// Gives the connection to the server that a program began before the engine existed (a
    /// main loop and a context, as `init` makes them, connecting or connected; its state
    /// callback replaced here): the next connection takes it, once. See
    /// `AudioEngine.adoptPulseAudioConnection`.
    static let begunConnection = Mutex<(@Sendable () -> (mainloop: LibPulse.Mainloop, context: LibPulse.Context)?)?>(nil)

    /// Connects to the default server (or takes the begun connection) and waits until the
    /// context is ready.
    init(deviceName: String, realtimePriority: Int32?) throws(PulseError) {
        self.deviceName = deviceName
        self.realtimePriority = realtimePriority
        switch LibPulse.loaded {
        case .success(let library): self.library = library
        case .failure(let failure):
            throw PulseError(operation: "dlopen", code: Int32(PA_ERR_NOTSUPPORTED.rawValue), device: deviceName,
                             message: failure.description, hint: "is libpulse installed (Debian: libpulse0)?")
        }
        let begun = Self.begunConnection.withLock { take in defer { take = nil }; return take?() }
        if let begun {
            mainloop = begun.mainloop
            context = begun.context
        } else {
            guard let mainloop = library.mainloopNew() else {
                throw PulseError(operation: "pa_threaded_mainloop_new", code: Int32(PA_ERR_INTERNAL.rawValue),
                                 device: deviceName, message: "out of memory", hint: nil)
            }
            self.mainloop = mainloop
            guard let context = library.contextNew(library.mainloopAPI(mainloop), "OpenMusicKit") else {
                library.mainloopFree(mainloop)
                throw PulseError(operation: "pa_context_new", code: Int32(PA_ERR_INTERNAL.rawValue),
                                 device: deviceName, message: "out of memory", hint: nil)
            }
            self.context = context
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        lock()
        do throws(PulseError) {
            library.contextSetStateCallback(context, { _, userdata in
                PulseConnection.with(userdata) { me in
                    me.raiseLoopThreadPriority()
                    me.signal()
                }
            }, me)
            if begun == nil {
                if library.contextConnect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
                    throw error("pa_context_connect")
                }
                guard library.mainloopStart(mainloop) >= 0 else {
                    throw PulseError(operation: "pa_threaded_mainloop_start", code: Int32(PA_ERR_INTERNAL.rawValue),
                                     device: deviceName, message: "no thread for libpulse's main loop", hint: nil)
                }
            }
            while true {
                let state = library.contextState(context)
                if state == PA_CONTEXT_READY { break }
                if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { throw error("pa_context_connect") }
                try waitWhileOpening("pa_context_connect")
            }
            unlock()
        } catch {
            unlock()
            close()
            throw error
        }
    }

    deinit { close() }

    /// Runs a callback's `body` on the connection behind `userdata` without retaining it.
    private static func with(_ userdata: UnsafeMutableRawPointer?, _ body: (PulseConnection) -> Void) {
        Unmanaged<PulseConnection>.fromOpaque(userdata!)._withUnsafeGuaranteedRef(body)
    }

    @inline(__always) func lock() { library.mainloopLock(mainloop) }
    @inline(__always) func unlock() { library.mainloopUnlock(mainloop) }
    /// Waits (lock held) until a callback signals.
    func wait() { library.mainloopWait(mainloop) }
    /// Wakes a `wait()` (from a callback).
    func signal() { library.mainloopSignal(mainloop, 0) }

    /// `wait()` while the device opens (lock held): on a thread whose waits may be given up
    /// (`AbandonableWaits`: the engine's `stop()` came), throws once its check says so, looking
    /// at least every 50 ms. A server that accepts the connection and never answers would
    /// otherwise hold the opening thread until libpulse's own timeout (30 s), and a stop or
    /// another client's request with it.
    func waitWhileOpening(_ operation: String) throws(PulseError) {
        guard let check = AbandonableWaits.checkOnThisThread else { return wait() }
        if check() { throw abandoned(operation) }
        openingWaiters += 1
        defer { openingWaiters -= 1 }
        armOpeningTicker()
        wait()
        if check() { throw abandoned(operation) }
    }

    private func abandoned(_ operation: String) -> PulseError {
        PulseError(operation: operation, code: Int32(PA_ERR_KILLED.rawValue), device: deviceName,
                   message: "given up: the player stopped while the server had not answered", hint: nil)
    }

    /// Lock held.
    private func armOpeningTicker() {
        let fireAt = library.monotonicMicroseconds() + 50_000
        if let openingTicker {
            library.contextTimerRestart(context, openingTicker, fireAt)
            return
        }
        openingTicker = library.contextTimerNew(context, fireAt, { _, _, _, userdata in
            PulseConnection.with(userdata) { me in
                // On libpulse's thread, lock held: wake the waiters, and again in 50 ms while any wait.
                me.signal()
                if me.openingWaiters > 0 { me.armOpeningTicker() }
            }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The context's last error for `operation` (or `code`, a `pa_error_code`), lock held.
    func error(_ operation: String, code: Int32? = nil) -> PulseError {
        library.error(operation, code: code ?? library.contextErrno(context), device: deviceName)
    }

    /// Once, on libpulse's thread (its first callback there): the audio thread's priority.
    func raiseLoopThreadPriority() {
        guard !askedForPriority, let realtimePriority, library.mainloopInThread(mainloop) != 0 else { return }
        askedForPriority = true
        _ = PlatformThread.requestRealtimePriority(realtimePriority)
    }

    /// Stops libpulse's thread, joining it (no callback runs after this); once.
    func stopLoop() {
        guard !isLoopStopped else { return }
        isLoopStopped = true
        library.mainloopStop(mainloop)
        library.contextSetStateCallback(context, nil, nil)
        library.contextSetSubscribeCallback(context, nil, nil)
    }

    /// Stops the loop and closes the connection; once. The streams on it are disconnected first
    /// (`PulseStream.close`).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        stopLoop()
        library.contextDisconnect(context)
        library.contextUnref(context)
        library.mainloopFree(mainloop)
    }
}
