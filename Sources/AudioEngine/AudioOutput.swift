import Glibc
import Synchronization

/// What the audio thread writes to: an ALSA PCM (`ALSAPCM`, any name ALSA knows), a stream on a
/// PulseAudio/PipeWire server through libpulse (`PulseStream`, for `pulseaudio` and
/// `pulseaudio:SINK`, which skips ALSA's configuration and pulse plugin), or an output registered
/// under a name of its own (`AudioOutputs.register`: the tests' manual-clock output). MPD's output
/// plugin interface is the model: open (the conformer's init), close, play (`write`), delay,
/// drain (the engine writes silence past the end and drops once it is heard), cancel (`drop`,
/// or `prepare` on a running output that `.prepareDiscardsPlayback`), pause, and flags
/// (`capabilities`).
///
/// Every output behaves as a PCM that starts when told: frames written while stopped wait for
/// `start()` (an ALSA device starts by itself once a period is in, its start threshold: the
/// engine writes a stopped output only right before it starts it, and `start()` on an output
/// that runs succeeds), `drop()` discards what the output holds, `prepare()` readies a dropped
/// output.
/// The real-time operations return a negative errno on failure (-EAGAIN when full, -EPIPE after
/// the output ran dry, -ESTRPIPE when suspended), as ALSA's do, so the render loop has one
/// vocabulary; `failure(_:code:)` turns one into the output's own error for the person.
///
/// Thread safety: opened on one thread, then used by the audio thread alone, until its owner
/// (the engine's session, after joining the audio thread; or the warm-up that was not taken)
/// calls `close()` on its own thread and lets it go. The audio thread calls it through this
/// protocol (see `AudioRenderer.device`); each conformer states what its calls do in real time.
protocol AudioOutput: AnyObject, Sendable {
    /// The name it was opened by (`hw:0`, `pulseaudio:SINK`, …).
    var name: String { get }
    /// What the output agreed to.
    var configuration: PCMConfiguration { get }
    var capabilities: AudioOutputCapabilities { get }
    /// The descriptors that wake the audio thread when a refill fits (or the output failed),
    /// followed by one free slot for the audio thread's own wake-up descriptor.
    var pollDescriptors: UnsafeMutablePointer<pollfd> { get }
    var pollDescriptorCount: Int { get }

    // Real-time operations: called on the audio thread only.

    /// Writes interleaved frames in `configuration`'s format; returns the frames accepted, or a
    /// negative errno.
    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int
    /// Frames the output takes now, or a negative errno.
    func availableFrames() -> Int
    /// Frames written and not yet heard, or a negative errno.
    func delayFrames() -> Int
    /// Plays what was written, from its first frame.
    func start() -> Int32
    /// Stops at once, discarding what the output holds.
    func drop() -> Int32
    /// Readies a dropped output for writing; on a running one that `.prepareDiscardsPlayback`,
    /// also discards what it holds (its next write replaces it).
    func prepare() -> Int32
    /// Pauses in place, or resumes from where it paused (`.pause`).
    func pause(_ enable: Bool) -> Int32
    /// Recovers from -EPIPE (ran dry) or -ESTRPIPE (suspended); prepared afterwards.
    func recover(from error: Int32) -> Int32

    // Off the audio thread.

    /// The error for `operation`, which failed on the audio thread with `code` (a negative
    /// errno from the calls above).
    func failure(_ operation: DeviceOperation, code: Int32) -> AudioOutputError
    /// Releases what the output holds outside this object (libpulse's thread and connection,
    /// the PCM); once, by the owner, on the owner's thread, before it lets the output go.
    func close()
}

/// An output with a volume of its own at a sound server (the native PulseAudio/PipeWire stream):
/// the engine's volume is set there, so the samples stay untouched and the desktop's mixer shows
/// it. On other outputs the audio thread scales the samples (`EngineSharedState.outputGainBits`).
protocol VolumeControlledOutput: AudioOutput {
    /// Sets the volume, 0...1 on the server's scale; off the audio thread.
    func setVolume(_ volume: Double)
    /// Called (on the output's own thread) when another client set the volume, with the new one.
    var volumeChangedElsewhere: (@Sendable (Double) -> Void)? { get set }
}

/// What an output can do besides play (MPD's output plugin flags).
struct AudioOutputCapabilities: OptionSet, Sendable {
    let rawValue: Int
    /// Pauses in place and resumes where it paused (`snd_pcm_pause`, a cork); without it, the
    /// engine drops at pause and writes the unheard frames again at resume.
    static let pause = AudioOutputCapabilities(rawValue: 1 << 0)
    /// `prepare()` on a running output discards what it holds, so a skip or a seek is one call
    /// (ALSA's external plugins, whose prepare replaces the server-side stream; the native
    /// stream, which switches to its spare). Kernel devices refuse it (-EBUSY): the engine
    /// drops first.
    static let prepareDiscardsPlayback = AudioOutputCapabilities(rawValue: 1 << 1)
    /// Its delay falls in real time while it plays (a sound card, a sound server): a reader of
    /// the position may count on from the audio thread's last publication by the wall clock
    /// (`EngineSharedState.readPosition`). An output on another clock (a test's manual clock)
    /// leaves it out, and the position is what the audio thread last published.
    static let realTimeClock = AudioOutputCapabilities(rawValue: 1 << 2)
}

/// Why an output could not be opened or failed while playing, in its own library's terms.
public enum AudioOutputError: Error, CustomStringConvertible, Sendable, Equatable {
    /// An ALSA PCM's call failed.
    case alsa(ALSAError)
    /// libpulse (the `pulseaudio` devices) failed.
    case pulse(PulseError)
    /// An output registered under its own name failed (`AudioOutputs.register`).
    case other(device: String, message: String)

    /// The output's name.
    public var device: String {
        switch self {
        case .alsa(let error): error.device
        case .pulse(let error): error.device
        case .other(let device, _): device
        }
    }

    public var description: String {
        switch self {
        case .alsa(let error): error.description
        case .pulse(let error): error.description
        case .other(let device, let message): "output '\(device)' failed: \(message)"
        }
    }
}

/// The operations of the audio thread, as it reports a failure.
enum DeviceOperation: UInt8 {
    case write, start, prepare, pause, drop, recover, poll
}

/// Opens outputs by name (MPD's output plugin list): a registered output's name,
/// `snapcast:PATH` (Snapcast's pipe source), `pulseaudio` and `pulseaudio:SINK` (libpulse), else ALSA.
enum AudioOutputs {
    typealias Opener = @Sendable (_ name: String, _ request: PCMRequest) throws(AudioOutputError) -> any AudioOutput

    private static let registered = Mutex<[String: Opener]>([:])

    /// Makes `name` open through `opener` (before ALSA and libpulse are asked); nil removes it.
    static func register(_ name: String, opener: Opener?) {
        registered.withLock { $0[name] = opener }
    }

    /// Opens and configures `name` for playback.
    static func open(_ name: String, request: PCMRequest) throws(AudioOutputError) -> any AudioOutput {
        if let opener = registered.withLock({ $0[name] }) { return try opener(name, request) }
        if SnapcastPipeOutput.isSnapcastName(name) { return try SnapcastPipeOutput(name: name, request: request) }
        if PulseStream.isPulseAudioName(name) {
            do { return try PulseStream(name: name, request: request) } catch { throw .pulse(error) }
        }
        do { return try ALSAPCM(name: name, request: request) } catch { throw .alsa(error) }
    }

    /// Opens `name`, or `fallback` when `name` cannot be opened and there is one; when neither
    /// opens, `name`'s error.
    static func open(_ name: String, fallback: String?, request: PCMRequest) throws(AudioOutputError) -> any AudioOutput {
        do {
            return try open(name, request: request)
        } catch {
            guard let fallback, fallback != name, let output = try? open(fallback, request: request) else { throw error }
            return output
        }
    }

    /// Where the sound server is looked for, for messages about a server that did not answer.
    static var pulseServerSetting: String {
        getenv("PULSE_SERVER").map { "PULSE_SERVER is \(String(cString: $0))" } ?? "PULSE_SERVER is not set"
    }
}
