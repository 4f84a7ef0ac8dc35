import PlatformSupport
import CSystemd
import Glibc
import MusicKitCore

// The wrapper of libsystemd's sd-bus (the only file that imports CSystemd): a connection to the
// session bus that serves objects, replies to their method calls and emits signals, with the
// values MPRIS uses. sd-bus is not thread-safe: a `DBusConnection` is used from the one thread
// that runs `serve(wake:onWake:)`.
//
// libsystemd is opened when a connection is first made (dlopen), not linked: it and the six
// libraries it needs would otherwise be loaded by every program that uses MusicKit (the CLI's
// start among them); only musickitd, on a desktop with a session bus, uses it.

/// A value on the bus (the types MPRIS uses).
indirect enum DBusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case double(Double)
    case strings([String])
    /// `a{sv}`: names to variants.
    case dictionary([String: DBusValue])
    case variant(DBusValue)

    /// The D-Bus type signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .boolean: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .double: "d"
        case .strings: "as"
        case .dictionary: "a{sv}"
        case .variant: "v"
        }
    }

    var string: String? {
        switch self {
        case .string(let text), .objectPath(let text): text
        case .variant(let inner): inner.string
        default: nil
        }
    }

    var int64: Int64? {
        switch self {
        case .int64(let value): value
        case .int32(let value): Int64(value)
        case .uint32(let value): Int64(value)
        case .variant(let inner): inner.int64
        default: nil
        }
    }

    var double: Double? {
        switch self {
        case .double(let value): value
        case .variant(let inner): inner.double
        default: nil
        }
    }

    var boolean: Bool? {
        switch self {
        case .boolean(let value): value
        case .variant(let inner): inner.boolean
        default: nil
        }
    }
}

struct DBusError: Error, CustomStringConvertible {
    let description: String

    init(_ call: String, _ result: Int32) {
        description = "\(call): \(String(cString: strerror(-result)))"
    }

    init(description: String) {
        self.description = description
    }
}

/// A method call to one of the served objects.
struct DBusMethodCall {
    let interface: String
    let member: String
    /// The arguments, in order (basic types and variants of them).
    let arguments: [DBusValue]
}

/// What a served object answers to a call.
enum DBusReply {
    case values([DBusValue])
    /// A D-Bus error (`org.freedesktop.DBus.Error.InvalidArgs`, …) with a message.
    case error(name: String, message: String)
    /// Not this object's: sd-bus answers that the method is unknown.
    case unknown
}

/// The sd-bus functions this file calls, from libsystemd.so.0 opened at the first connection.
private struct SDBusLibrary {
    typealias Bus = OpaquePointer?
    typealias Message = OpaquePointer?
    typealias Text = UnsafePointer<CChar>?
    let openUser: @convention(c) (UnsafeMutablePointer<Bus>?) -> Int32
    let requestName: @convention(c) (Bus, Text, UInt64) -> Int32
    let addObject: @convention(c) (Bus, UnsafeMutablePointer<OpaquePointer?>?, Text, sd_bus_message_handler_t?,
                                   UnsafeMutableRawPointer?) -> Int32
    let slotUnref: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let flushCloseUnref: @convention(c) (Bus) -> Bus
    let process: @convention(c) (Bus, UnsafeMutablePointer<Message>?) -> Int32
    let getTimeout: @convention(c) (Bus, UnsafeMutablePointer<UInt64>?) -> Int32
    let getEvents: @convention(c) (Bus) -> Int32
    let getFd: @convention(c) (Bus) -> Int32
    let send: @convention(c) (Bus, Message, UnsafeMutablePointer<UInt64>?) -> Int32
    let messageNewSignal: @convention(c) (Bus, UnsafeMutablePointer<Message>?, Text, Text, Text) -> Int32
    let messageNewMethodReturn: @convention(c) (Message, UnsafeMutablePointer<Message>?) -> Int32
    let messageUnref: @convention(c) (Message) -> Message
    let messageGetInterface: @convention(c) (Message) -> Text
    let messageGetMember: @convention(c) (Message) -> Text
    let messageAppendBasic: @convention(c) (Message, CChar, UnsafeRawPointer?) -> Int32
    let messageOpenContainer: @convention(c) (Message, CChar, Text) -> Int32
    let messageCloseContainer: @convention(c) (Message) -> Int32
    let messagePeekType: @convention(c) (Message, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Text>?) -> Int32
    let messageReadBasic: @convention(c) (Message, CChar, UnsafeMutableRawPointer?) -> Int32
    let messageEnterContainer: @convention(c) (Message, CChar, Text) -> Int32
    let messageExitContainer: @convention(c) (Message) -> Int32
    let replyMethodError: @convention(c) (Message, UnsafePointer<sd_bus_error>?) -> Int32
    let errorSet: @convention(c) (UnsafeMutablePointer<sd_bus_error>?, Text, Text) -> Int32
    let errorFree: @convention(c) (UnsafeMutablePointer<sd_bus_error>?) -> Void

    /// Opens libsystemd.so.0 and finds every function, or says which is missing.
    static func load() -> Result<SDBusLibrary, DBusError> {
        DynamicLibrary.table("libsystemd.so.0") { function throws(DynamicLibrary.Failure) in
            SDBusLibrary(
                openUser: try function("sd_bus_open_user"), requestName: try function("sd_bus_request_name"),
                addObject: try function("sd_bus_add_object"), slotUnref: try function("sd_bus_slot_unref"),
                flushCloseUnref: try function("sd_bus_flush_close_unref"), process: try function("sd_bus_process"),
                getTimeout: try function("sd_bus_get_timeout"), getEvents: try function("sd_bus_get_events"),
                getFd: try function("sd_bus_get_fd"), send: try function("sd_bus_send"),
                messageNewSignal: try function("sd_bus_message_new_signal"),
                messageNewMethodReturn: try function("sd_bus_message_new_method_return"),
                messageUnref: try function("sd_bus_message_unref"),
                messageGetInterface: try function("sd_bus_message_get_interface"),
                messageGetMember: try function("sd_bus_message_get_member"),
                messageAppendBasic: try function("sd_bus_message_append_basic"),
                messageOpenContainer: try function("sd_bus_message_open_container"),
                messageCloseContainer: try function("sd_bus_message_close_container"),
                messagePeekType: try function("sd_bus_message_peek_type"),
                messageReadBasic: try function("sd_bus_message_read_basic"),
                messageEnterContainer: try function("sd_bus_message_enter_container"),
                messageExitContainer: try function("sd_bus_message_exit_container"),
                replyMethodError: try function("sd_bus_reply_method_error"),
                errorSet: try function("sd_bus_error_set"), errorFree: try function("sd_bus_error_free"))
        }.mapError { DBusError(description: $0.description) }
    }
}

/// Loaded once, at the first connection.
private let loadedLibrary = SDBusLibrary.load()

/// The loaded library: used only by a `DBusConnection`, which exists only once it loaded.
private var lib: SDBusLibrary {
    guard case .success(let library) = loadedLibrary else { preconditionFailure("sd-bus used before a connection was made") }
    return library
}

final class DBusConnection {
    private var bus: OpaquePointer?
    private var handlers: [Handler] = []

    /// Keeps a served object's handler alive; sd-bus holds a pointer to it.
    private final class Handler {
        let reply: (DBusMethodCall) -> DBusReply
        var slot: OpaquePointer?
        init(_ reply: @escaping (DBusMethodCall) -> DBusReply) { self.reply = reply }
    }

    /// Connects to the user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`).
    init() throws(DBusError) {
        _ = try loadedLibrary.get()
        var bus: OpaquePointer?
        let result = lib.openUser(&bus)
        guard result >= 0 else { throw DBusError("connecting to the session bus", result) }
        self.bus = bus
    }

    deinit {
        for handler in handlers { _ = lib.slotUnref(handler.slot) }
        _ = lib.flushCloseUnref(bus)
    }

    /// Takes a well-known name; false when another connection owns it.
    func requestName(_ name: String) throws(DBusError) -> Bool {
        let result = lib.requestName(bus, name, 0)
        if result == -EEXIST { return false }
        guard result >= 0 else { throw DBusError("requesting the name \(name)", result) }
        return true
    }

    /// Serves the object at `path`: every method call to it goes to `reply`.
    func addObject(path: String, reply: @escaping (DBusMethodCall) -> DBusReply) throws(DBusError) {
        let handler = Handler(reply)
        var slot: OpaquePointer?
        let result = lib.addObject(bus, &slot, path, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            let handler = Unmanaged<Handler>.fromOpaque(userdata).takeUnretainedValue()
            return DBusConnection.dispatch(message, to: handler.reply)
        }, Unmanaged.passUnretained(handler).toOpaque())
        guard result >= 0 else { throw DBusError("serving \(path)", result) }
        handler.slot = slot
        handlers.append(handler)
    }

    /// Emits a signal from `path`.
    func emitSignal(path: String, interface: String, member: String, arguments: [DBusValue]) throws(DBusError) {
        var message: OpaquePointer?
        var result = lib.messageNewSignal(bus, &message, path, interface, member)
        guard result >= 0 else { throw DBusError("creating the signal \(member)", result) }
        defer { _ = lib.messageUnref(message) }
        for argument in arguments {
            result = Self.append(argument, to: message)
            guard result >= 0 else { throw DBusError("writing the signal \(member)", result) }
        }
        result = lib.send(bus, message, nil)
        guard result >= 0 else { throw DBusError("sending the signal \(member)", result) }
    }

    /// Processes the bus until it fails or closes: answers calls as they come, and runs `onWake`
    /// (on this thread) each time `wake` becomes readable (after draining it).
    func serve(wake: Int32, onWake: () -> Void) -> DBusError {
        while true {
            var result: Int32
            repeat {
                result = lib.process(bus, nil)
            } while result > 0
            if result < 0 { return DBusError("processing the bus", result) }
            var timeoutMicroseconds: UInt64 = 0
            var waitMilliseconds: Int32 = -1
            if lib.getTimeout(bus, &timeoutMicroseconds) > 0, timeoutMicroseconds != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
                waitMilliseconds = timeoutMicroseconds <= nowMicroseconds
                    ? 0 : Int32(clamping: (timeoutMicroseconds - nowMicroseconds + 999) / 1_000)
            }
            let events = lib.getEvents(bus)
            if events < 0 { return DBusError("polling the bus", events) }
            var descriptors = [pollfd(fd: lib.getFd(bus), events: Int16(events), revents: 0),
                               pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, waitMilliseconds)
            if ready < 0 && errno != EINTR { return DBusError("poll", -errno) }
            if descriptors[1].revents & Int16(POLLIN) != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = read(wake, &drain, drain.count)
                onWake()
            }
        }
    }

    // MARK: - Messages

    private static func dispatch(_ message: OpaquePointer, to reply: (DBusMethodCall) -> DBusReply) -> Int32 {
        guard let interface = lib.messageGetInterface(message).map({ String(cString: $0) }),
              let member = lib.messageGetMember(message).map({ String(cString: $0) }) else { return 0 }
        let arguments: [DBusValue]
        do throws(DBusError) {
            arguments = try readArguments(message)
        } catch {
            return replyError(message, name: "org.freedesktop.DBus.Error.InvalidArgs", text: error.description)
        }
        switch reply(DBusMethodCall(interface: interface, member: member, arguments: arguments)) {
        case .unknown:
            return 0
        case .error(let name, let text):
            return replyError(message, name: name, text: text)
        case .values(let values):
            var answer: OpaquePointer?
            var result = lib.messageNewMethodReturn(message, &answer)
            guard result >= 0 else { return result }
            defer { _ = lib.messageUnref(answer) }
            for value in values {
                result = append(value, to: answer)
                guard result >= 0 else { return result }
            }
            result = lib.send(nil, answer, nil)
            return result < 0 ? result : 1
        }
    }

    private static func replyError(_ message: OpaquePointer, name: String, text: String) -> Int32 {
        var error = sd_bus_error()
        _ = lib.errorSet(&error, name, text)
        defer { lib.errorFree(&error) }
        let result = lib.replyMethodError(message, &error)
        return result < 0 ? result : 1
    }

    private static func type(_ character: Character) -> CChar { CChar(character.asciiValue!) }

    private static func append(_ value: DBusValue, to message: OpaquePointer?) -> Int32 {
        switch value {
        case .string(let text): return lib.messageAppendBasic(message, type("s"), text)
        case .objectPath(let path): return lib.messageAppendBasic(message, type("o"), path)
        case .boolean(let flag):
            var bit: Int32 = flag ? 1 : 0
            return lib.messageAppendBasic(message, type("b"), &bit)
        case .int32(var number): return lib.messageAppendBasic(message, type("i"), &number)
        case .uint32(var number): return lib.messageAppendBasic(message, type("u"), &number)
        case .int64(var number): return lib.messageAppendBasic(message, type("x"), &number)
        case .double(var number): return lib.messageAppendBasic(message, type("d"), &number)
        case .strings(let texts):
            return container(type("a"), "s", message) { texts.lazy.map { append(.string($0), to: message) }.first { $0 < 0 } ?? 0 }
        case .dictionary(let entries):
            return container(type("a"), "{sv}", message) {
                for (name, entry) in entries.sorted(by: { $0.key < $1.key }) {
                    let result = container(type("e"), "sv", message) {
                        let result = append(.string(name), to: message)
                        return result < 0 ? result : append(entry.isVariant ? entry : .variant(entry), to: message)
                    }
                    if result < 0 { return result }
                }
                return 0
            }
        case .variant(let inner):
            return container(type("v"), inner.signature, message) { append(inner, to: message) }
        }
    }

    private static func container(_ kind: CChar, _ contents: String, _ message: OpaquePointer?, _ body: () -> Int32) -> Int32 {
        var result = lib.messageOpenContainer(message, kind, contents)
        guard result >= 0 else { return result }
        result = body()
        guard result >= 0 else { return result }
        return lib.messageCloseContainer(message)
    }

    /// The call's arguments: basic values, and variants holding one.
    private static func readArguments(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try readValue(message) { values.append(value) }
        return values
    }

    private static func readValue(_ message: OpaquePointer) throws(DBusError) -> DBusValue? {
        var kind: CChar = 0
        var contents: UnsafePointer<CChar>?
        let peeked = lib.messagePeekType(message, &kind, &contents)
        guard peeked >= 0 else { throw DBusError("reading the arguments", peeked) }
        if peeked == 0 { return nil }
        func basic<T: BitwiseCopyable>(_ initial: T) throws(DBusError) -> T {
            var value = initial
            let result = withUnsafeMutableBytes(of: &value) { lib.messageReadBasic(message, kind, $0.baseAddress) }
            guard result >= 0 else { throw DBusError("reading an argument", result) }
            return value
        }
        switch UInt8(bitPattern: kind) {
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let pointer: UnsafePointer<CChar>? = try basic(nil)
            let text = pointer.map { String(cString: $0) } ?? ""
            return kind == type("o") ? .objectPath(text) : .string(text)
        case UInt8(ascii: "b"): return .boolean(try basic(Int32(0)) != 0)
        case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .int64(Int64(bitPattern: try basic(UInt64(0))))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        case UInt8(ascii: "v"):
            var result = lib.messageEnterContainer(message, kind, contents)
            guard result >= 0 else { throw DBusError("reading a variant", result) }
            let inner = try readValue(message)
            result = lib.messageExitContainer(message)
            guard result >= 0, let inner else { throw DBusError("reading a variant", min(result, -EINVAL)) }
            return .variant(inner)
        default:
            throw DBusError("an argument of type \(Character(UnicodeScalar(UInt8(bitPattern: kind))))", -EINVAL)
        }
    }
}

private extension DBusValue {
    var isVariant: Bool { if case .variant = self { true } else { false } }
}
