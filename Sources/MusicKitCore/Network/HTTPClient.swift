import PlatformSupport
import AudioEngine
import Foundation
import Glibc

/// Sends one HTTP/1.1 request and reads the whole answer: plain TCP for `http`, TLS (OpenSSL,
/// certificates verified) for `https`; `Content-Length`, chunked and read-to-close bodies;
/// redirects followed (up to 5); `timeoutInterval` applies to connecting and to each wait for
/// bytes, and the whole exchange has a deadline besides (`deadline`), so a server that drips
/// bytes or headers cannot hold a request. Failures are `URLError`s, as URLSession's are.
/// Blocking: callers run it off the cooperative pool (`HTTPClient.data(for:)`).
///
/// Credentials (`credentialFields`) stay with the origin they were sent to and never cross a
/// network in clear text: plain `http` carries them only to this machine (loopback), which is
/// where the tests' and a developer's local API servers are; elsewhere such a request is refused
/// with `URLError.appTransportSecurityRequiresSecureConnection`, as Apple's ATS refuses it.
enum HTTPClient {
    /// Bodies longer than this are refused (`URLError.dataLengthExceedsMaximum`).
    static let maximumBodyBytes = 64 << 20

    /// A response's head (status line, header fields, and any `1xx` interim answers before it)
    /// longer than this is refused (`URLError.badServerResponse`).
    static let maximumHeadBytes = 64 << 10

    /// How long a whole exchange may take, redirects included, from the first connection to the
    /// last byte: for answers read whole (the API's JSON) and for downloads (previews, bounded
    /// in size by their caller). Past it, `URLError.timedOut`.
    static let deadline = (answer: TimeInterval(120), download: TimeInterval(600))

    /// An HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"), as `Retry-After` and `Expires` carry.
    static func date(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }

    /// The answer to `request`, on a thread of its own.
    static func data(for request: HTTPRequest) async throws -> (Data, HTTPResponse) {
        try await withCheckedThrowingContinuation { continuation in
            PlatformThread.detached(name: "musickit.http") { continuation.resume(with: Result { try send(request) }) }
        }
    }

    /// Downloads what `request` answers, handing `sink` the body as it arrives with the length
    /// the server announced. A status other than 2xx (after redirects) is an error, and `sink`
    /// hears nothing then. Blocking.
    static func download(_ request: HTTPRequest, into sink: @escaping BodySink) throws {
        let (_, response) = try send(request, body: sink)
        guard (200..<300).contains(response.statusCode) else {
            throw URLError(.resourceUnavailable, userInfo: [NSLocalizedDescriptionKey: "HTTP \(response.statusCode)",
                                                            NSURLErrorFailingURLErrorKey: request.url as Any])
        }
    }

    /// Where `send` hands a 2xx answer's body as it arrives, with the announced length.
    typealias BodySink = (_ bytes: UnsafeRawBufferPointer, _ total: Int?) throws -> Void

    /// The answer to `request`, following redirects; with `sink`, a 2xx answer's body goes there
    /// as it arrives instead of into the returned data. `seconds` replaces the `deadline`.
    static func send(_ request: HTTPRequest, body sink: BodySink? = nil, deadline seconds: TimeInterval? = nil) throws -> (Data, HTTPResponse) {
        var request = request
        let deadline = Date(timeIntervalSinceNow: seconds ?? (sink == nil ? Self.deadline.answer : Self.deadline.download))
        for _ in 0...5 {
            let (data, response): (Data, HTTPResponse)
            do {
                (data, response) = try sendOnce(request, sink, deadline: deadline)
            } catch let error as URLError where error.failingURL == nil {
                // Which URL failed, as URLSession says.
                var userInfo = error.userInfo
                userInfo[NSURLErrorFailingURLErrorKey] = request.url
                throw URLError(error.code, userInfo: userInfo)
            }
            guard [301, 302, 303, 307, 308].contains(response.statusCode),
                  let location = response.value(forHTTPHeaderField: "Location"),
                  let base = request.url, let next = URL(string: location, relativeTo: base)?.absoluteURL else {
                return (data, response)
            }
            if response.statusCode == 303 { request.httpMethod = "GET"; request.httpBody = nil }
            if !Self.isSameOrigin(base, next) {
                // Credentials are for the origin they were made for: never sent to another
                // host, port or scheme (https → http would send them in clear text).
                for field in Self.credentialFields { request.setValue(nil, forHTTPHeaderField: field) }
            }
            request.url = next
        }
        throw URLError(.httpTooManyRedirects, userInfo: [NSLocalizedDescriptionKey: "more than 5 redirects from \(request.url?.absoluteString ?? "")"])
    }

    /// The header fields that carry credentials: the developer token, the user's token, cookies.
    static let credentialFields = ["Authorization", "Music-User-Token", "Cookie", "Proxy-Authorization"]

    /// Whether `a` and `b` have one origin: scheme, host and port (the scheme's default when
    /// absent), compared as RFC 6454 does.
    static func isSameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int)? {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
            return (scheme, host, url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1))
        }
        guard let first = origin(a), let second = origin(b) else { return false }
        return first == second
    }

    /// Whether `host` names this machine: `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return true }
        var address = in_addr()
        return inet_pton(AF_INET, name, &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127
    }

    private static func sendOnce(_ request: HTTPRequest, _ sink: BodySink?, deadline: Date) throws -> (Data, HTTPResponse) {
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty else {
            throw URLError(.badURL)
        }
        guard scheme == "http" || scheme == "https" else { throw URLError(.unsupportedURL) }
        if scheme == "http", !isLoopback(host), credentialFields.contains(where: { request.value(forHTTPHeaderField: $0) != nil }) {
            throw URLError(.appTransportSecurityRequiresSecureConnection, userInfo: [
                NSLocalizedDescriptionKey: "\(host): credentials are sent only over https (plain http only to this machine)"])
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let timeout = min(request.timeoutInterval > 0 ? request.timeoutInterval : 60, max(deadline.timeIntervalSinceNow, 0.001))
        let socket = try connect(host: host, port: port, timeout: timeout)
        defer { close(socket) }
        let stream: ByteStream
        if scheme == "https" {
            do {
                stream = .tls(try TLSConnection(descriptor: socket, host: host))
            } catch {
                throw URLError(error.isUntrustedCertificate ? .serverCertificateUntrusted : .secureConnectionFailed,
                               userInfo: [NSLocalizedDescriptionKey: error.description])
            }
        } else {
            stream = .plain(socket)
        }

        let method = request.httpMethod ?? "GET"
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let defaultPort = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\(defaultPort ? "" : ":\(port)")\r\n"
        var fields = request.allHTTPHeaderFields ?? [:]
        if request.value(forHTTPHeaderField: "User-Agent") == nil { fields["User-Agent"] = "OpenMusicKit" }
        if request.value(forHTTPHeaderField: "Accept") == nil { fields["Accept"] = "application/json" }
        fields["Connection"] = "close"
        if let body = request.httpBody { fields["Content-Length"] = String(body.count) }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }),
                  !value.contains(where: { $0 == "\r" || $0 == "\n" }) else { throw URLError(.badURL) }
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        var outgoing = Data(head.utf8)
        if let body = request.httpBody { outgoing.append(body) }
        try outgoing.withUnsafeBytes { try stream.write($0) }

        var reader = ResponseReader(stream: stream, socket: socket, timeout: timeout, deadline: deadline)
        let (status, headerFields) = try reader.readHead()
        guard let response = HTTPResponse(url: url, statusCode: status, headerFields: headerFields) else {
            throw URLError(.badServerResponse)
        }
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) { return (Data(), response) }
        if let sink, (200..<300).contains(status) {
            let total = response.expectedContentLength >= 0 ? Int(response.expectedContentLength) : nil
            try reader.streamBody(response) { bytes in try sink(bytes, total) }
            return (Data(), response)
        }
        return (try reader.readBody(response), response)
    }

    /// A socket connected to `host`:`port` (each address tried in turn), with `timeout` as its
    /// send and receive timeouts.
    private static func connect(host: String, port: Int, timeout: TimeInterval) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw URLError(.cannotFindHost, userInfo: [NSLocalizedDescriptionKey: "\(host): no such host"])
        }
        defer { freeaddrinfo(first) }
        var reason = "no address"
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let current = address {
            address = current.pointee.ai_next
            let descriptor = socket(current.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { continue }
            let flags = fcntl(descriptor, F_GETFL)
            _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
            var result = Glibc.connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen)
            if result != 0 && errno == EINPROGRESS {
                var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&poller, 1, Int32(timeout * 1000))
                if ready == 0 {
                    close(descriptor)
                    throw URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: "\(host):\(port): no answer in \(timeout) s"])
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
                result = ready > 0 && error == 0 ? 0 : -1
                if error != 0 { errno = error }
            }
            if result == 0 {
                _ = fcntl(descriptor, F_SETFL, flags)
                var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
                setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                return descriptor
            }
            reason = String(cString: strerror(errno))
            close(descriptor)
        }
        throw URLError(.cannotConnectToHost, userInfo: [NSLocalizedDescriptionKey: "\(host):\(port): \(reason)"])
    }

    /// The connection's bytes, plain or through TLS.
    private enum ByteStream {
        case plain(Int32)
        case tls(TLSConnection)

        func read(_ buffer: UnsafeMutableRawPointer, _ count: Int) throws -> Int {
            switch self {
            case .plain(let descriptor):
                while true {
                    let received = recv(descriptor, buffer, count, 0)
                    if received >= 0 { return received }
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { throw URLError(.timedOut) }
                    throw URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))])
                }
            case .tls(let connection):
                do { return try connection.read(buffer, count) } catch {
                    throw URLError(errno == EAGAIN ? .timedOut : .networkConnectionLost,
                                   userInfo: [NSLocalizedDescriptionKey: error.description])
                }
            }
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            switch self {
            case .plain(let descriptor):
                do { try SystemPlayerWire.sendAll(bytes, on: descriptor) } catch {
                    throw URLError(errno == EAGAIN ? .timedOut : .networkConnectionLost)
                }
            case .tls(let connection):
                do { try connection.write(bytes) } catch {
                    throw URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: error.description])
                }
            }
        }
    }

    /// Reads a response: the head, then the body as its framing says.
    private struct ResponseReader {
        let stream: ByteStream
        /// The connection's socket, whose receive timeout shrinks as the deadline nears.
        let socket: Int32
        /// The longest wait for bytes, and when the whole exchange must be over.
        let timeout: TimeInterval
        let deadline: Date
        var buffered: [UInt8] = []
        var atEnd = false
        /// Bytes of head read so far, interim answers included.
        var headBytes = 0

        init(stream: ByteStream, socket: Int32, timeout: TimeInterval, deadline: Date) {
            self.stream = stream
            self.socket = socket
            self.timeout = timeout
            self.deadline = deadline
        }

        /// Reads more into `buffered`; false at the end of the stream.
        mutating func fill() throws -> Bool {
            guard !atEnd else { return false }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                throw URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: "the exchange took longer than its deadline"])
            }
            if left < timeout {
                var limit = timeval(tv_sec: Int(left), tv_usec: max(Int((left - left.rounded(.down)) * 1_000_000), 1))
                setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = try chunk.withUnsafeMutableBytes { try stream.read($0.baseAddress!, $0.count) }
            if count == 0 { atEnd = true; return false }
            buffered += chunk[0..<count]
            if buffered.count > HTTPClient.maximumBodyBytes + 65_536 { throw URLError(.dataLengthExceedsMaximum) }
            return true
        }

        /// One line (without CRLF), or throws when the stream ends first.
        mutating func line() throws -> String {
            while true {
                if let end = buffered.firstIndex(of: 0x0A) {
                    let text = buffered[..<end].last == 0x0D ? buffered[..<(end - 1)] : buffered[..<end]
                    let line = String(decoding: text, as: UTF8.self)
                    buffered.removeFirst(end + 1)
                    return line
                }
                guard buffered.count < 65_536, try fill() else { throw URLError(.badServerResponse) }
            }
        }

        /// One line of the head, counted against `maximumHeadBytes`.
        mutating func headLine() throws -> String {
            let text = try line()
            headBytes += text.utf8.count + 2
            guard headBytes <= HTTPClient.maximumHeadBytes else {
                throw URLError(.badServerResponse, userInfo: [
                    NSLocalizedDescriptionKey: "the answer's head is longer than \(HTTPClient.maximumHeadBytes) bytes"])
            }
            return text
        }

        /// The status code and header fields (repeated fields joined with commas) of the final
        /// answer: interim `1xx` answers (`100 Continue`) before it are read and dropped, in a
        /// loop bounded by `maximumHeadBytes`.
        mutating func readHead() throws -> (Int, [String: String]) {
            while true {
                let (status, fields) = try readOneHead()
                if (100..<200).contains(status) && status != 101 { continue }
                return (status, fields)
            }
        }

        private mutating func readOneHead() throws -> (Int, [String: String]) {
            var statusLine = try headLine()
            while statusLine.isEmpty { statusLine = try headLine() }
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
                throw URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "not an HTTP response: \(statusLine.prefix(80))"])
            }
            var fields: [String: String] = [:]
            while true {
                let field = try headLine()
                if field.isEmpty { break }
                guard let colon = field.firstIndex(of: ":") else { continue }
                let name = String(field[..<colon]).trimmingCharacters(in: .whitespaces)
                let value = String(field[field.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                if let existing = fields.first(where: { $0.key.caseInsensitiveCompare(name) == .orderedSame }) {
                    fields[existing.key] = existing.value + ", " + value
                } else {
                    fields[name] = value
                }
            }
            return (status, fields)
        }

        /// The whole body, at most `maximumBodyBytes`.
        mutating func readBody(_ response: HTTPResponse) throws -> Data {
            if response.expectedContentLength > HTTPClient.maximumBodyBytes { throw URLError(.dataLengthExceedsMaximum) }
            var body = Data()
            try streamBody(response) { bytes in
                guard body.count + bytes.count <= HTTPClient.maximumBodyBytes else { throw URLError(.dataLengthExceedsMaximum) }
                body.append(contentsOf: bytes)
            }
            return body
        }

        /// Hands the body to `deliver` piece by piece as it arrives, as its framing says
        /// (chunked, `Content-Length`, or up to the end of the connection).
        mutating func streamBody(_ response: HTTPResponse, _ deliver: (UnsafeRawBufferPointer) throws -> Void) throws {
            /// Delivers and drops the first `count` buffered bytes.
            func hand(_ count: Int, from reader: inout ResponseReader) throws {
                try reader.buffered.withUnsafeBytes { try deliver(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                reader.buffered.removeFirst(count)
            }
            if response.value(forHTTPHeaderField: "Transfer-Encoding")?.lowercased().contains("chunked") == true {
                while true {
                    let sizeLine = try line()
                    guard let size = Int(sizeLine.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? "", radix: 16),
                          size >= 0 else { throw URLError(.badServerResponse) }
                    if size == 0 { break }
                    var remaining = size
                    while remaining > 0 {
                        if buffered.isEmpty { guard try fill() else { throw URLError(.networkConnectionLost) } }
                        let count = min(remaining, buffered.count)
                        try hand(count, from: &self)
                        remaining -= count
                    }
                    while buffered.count < 2 { guard try fill() else { throw URLError(.networkConnectionLost) } }
                    buffered.removeFirst(2)  // the chunk's CRLF
                }
                return
            }
            let length = response.expectedContentLength
            if length >= 0 {
                var remaining = Int(length)
                while remaining > 0 {
                    if buffered.isEmpty { guard try fill() else { throw URLError(.networkConnectionLost) } }
                    let count = min(remaining, buffered.count)
                    try hand(count, from: &self)
                    remaining -= count
                }
                return
            }
            while true {
                if !buffered.isEmpty { try hand(buffered.count, from: &self) }
                guard try fill() else { return }
            }
        }
    }
}
