import PlatformSupport
import AudioEngine
import COpenSSL
import Foundation

// The wrapper of OpenSSL (the only file that imports COpenSSL): ES256 signatures (ECDSA on P-256
// with SHA-256) with a PEM private key, as Apple's developer tokens need (libcrypto), and TLS
// client connections for the Apple Music API (libssl). Each library is opened at its first use
// (see DynamicLibrary), not at every program's start.

/// A P-256 private key read from PEM (a `.p8` file from developer.apple.com is PKCS#8 PEM).
final class ES256PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is only read after init (signing uses its own context); OpenSSL
    // allows that from several threads.
    private let key: OpaquePointer

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads the key; fails when the text is not a PEM private key or the key is not P-256.
    init(pem: Data) throws(Failure) {
        let crypto = try LibCrypto.shared()
        let key = pem.withUnsafeBytes { bytes -> OpaquePointer? in
            guard let bio = crypto.newMemoryBuffer(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { _ = crypto.freeBuffer(bio) }
            return crypto.readPrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            throw Failure(description: "not a PEM private key (\(crypto.lastError()))")
        }
        var group = [CChar](repeating: 0, count: 64)
        var length = 0
        let isEC = crypto.baseID(key) == EVP_PKEY_EC
        guard isEC, crypto.groupName(key, &group, group.count, &length) == 1,
              String(decoding: group.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
            let bits = crypto.bits(key)
            crypto.freeKey(key)
            throw Failure(description: isEC ? "an EC key of \(bits) bits on another curve; Apple's keys are P-256 (prime256v1)"
                                            : "not an EC key (a \(bits)-bit key of another type); Apple's keys are EC P-256")
        }
        self.key = key
    }

    deinit {
        if let crypto = try? LibCrypto.shared() { crypto.freeKey(key) }
    }

    /// The ES256 signature of `message`: r and s, 32 bytes each (JWS's form, not DER).
    func sign(_ message: Data) throws(Failure) -> Data {
        let crypto = try LibCrypto.shared()
        guard let context = crypto.newDigestContext() else { throw Failure(description: "EVP_MD_CTX_new failed") }
        defer { crypto.freeDigestContext(context) }
        guard crypto.digestSignInit(context, nil, crypto.sha256(), nil, key) == 1 else {
            throw Failure(description: "EVP_DigestSignInit: \(crypto.lastError())")
        }
        var der = [UInt8](repeating: 0, count: 80)  // a P-256 DER signature is at most 72 bytes
        var derLength = der.count
        let signed = message.withUnsafeBytes { bytes in
            crypto.digestSign(context, &der, &derLength, bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
        }
        guard signed == 1 else { throw Failure(description: "EVP_DigestSign: \(crypto.lastError())") }
        var cursor: UnsafePointer<UInt8>? = nil
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            cursor = buffer.baseAddress
            return crypto.decodeSignature(nil, &cursor, derLength)
        }
        guard let signature else { throw Failure(description: "d2i_ECDSA_SIG: \(crypto.lastError())") }
        defer { crypto.freeSignature(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        guard crypto.bignumToPaddedBytes(crypto.signatureR(signature), &raw, 32) == 32,
              raw.withUnsafeMutableBufferPointer({ crypto.bignumToPaddedBytes(crypto.signatureS(signature), $0.baseAddress! + 32, 32) }) == 32 else {
            throw Failure(description: "BN_bn2binpad: \(crypto.lastError())")
        }
        return Data(raw)
    }
}

/// The libcrypto functions this file calls, from libcrypto.so.3 opened at first use.
private struct LibCrypto {
    typealias Key = OpaquePointer
    let newMemoryBuffer: @convention(c) (UnsafeRawPointer?, Int32) -> OpaquePointer?
    let freeBuffer: @convention(c) (OpaquePointer?) -> Int32
    let readPrivateKey: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?,
                                        (@convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32)?,
                                        UnsafeMutableRawPointer?) -> OpaquePointer?
    let baseID: @convention(c) (Key?) -> Int32
    let bits: @convention(c) (Key?) -> Int32
    let groupName: @convention(c) (Key?, UnsafeMutablePointer<CChar>?, Int, UnsafeMutablePointer<Int>?) -> Int32
    let freeKey: @convention(c) (Key?) -> Void
    let newDigestContext: @convention(c) () -> OpaquePointer?
    let freeDigestContext: @convention(c) (OpaquePointer?) -> Void
    let sha256: @convention(c) () -> OpaquePointer?
    let digestSignInit: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?, Key?) -> Int32
    let digestSign: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?,
                                    UnsafePointer<UInt8>?, Int) -> Int32
    let decodeSignature: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int) -> OpaquePointer?
    let signatureR: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let signatureS: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let freeSignature: @convention(c) (OpaquePointer?) -> Void
    let bignumToPaddedBytes: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32
    let errorCode: @convention(c) () -> UInt
    let errorString: @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void

    private static let loaded: Result<LibCrypto, ES256PrivateKey.Failure> =
        DynamicLibrary.table("libcrypto.so.3") { function throws(DynamicLibrary.Failure) in
            LibCrypto(
                newMemoryBuffer: try function("BIO_new_mem_buf"), freeBuffer: try function("BIO_free"),
                readPrivateKey: try function("PEM_read_bio_PrivateKey"), baseID: try function("EVP_PKEY_get_base_id"),
                bits: try function("EVP_PKEY_get_bits"), groupName: try function("EVP_PKEY_get_group_name"),
                freeKey: try function("EVP_PKEY_free"), newDigestContext: try function("EVP_MD_CTX_new"),
                freeDigestContext: try function("EVP_MD_CTX_free"), sha256: try function("EVP_sha256"),
                digestSignInit: try function("EVP_DigestSignInit"), digestSign: try function("EVP_DigestSign"),
                decodeSignature: try function("d2i_ECDSA_SIG"), signatureR: try function("ECDSA_SIG_get0_r"),
                signatureS: try function("ECDSA_SIG_get0_s"), freeSignature: try function("ECDSA_SIG_free"),
                bignumToPaddedBytes: try function("BN_bn2binpad"), errorCode: try function("ERR_get_error"),
                errorString: try function("ERR_error_string_n"))
        }.mapError { ES256PrivateKey.Failure(description: $0.description) }

    static func shared() throws(ES256PrivateKey.Failure) -> LibCrypto { try loaded.get() }

    /// OpenSSL's last error on this thread, as text.
    func lastError() -> String {
        let code = errorCode()
        guard code != 0 else { return "no detail from OpenSSL" }
        var text = [CChar](repeating: 0, count: 256)
        errorString(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

// MARK: - TLS (libssl)

/// A TLS client connection over a connected socket, the server's certificate verified against
/// the system's trusted certificates (and `MUSICKIT_CA_FILE`'s, when set: a test server's) and
/// the host name. There is no way to turn verification off.
final class TLSConnection {
    private let ssl: LibSSL
    private let context: OpaquePointer
    private let connection: OpaquePointer

    struct Failure: Error, CustomStringConvertible {
        /// The certificate could not be verified (as opposed to a failed handshake or transfer).
        let isUntrustedCertificate: Bool
        let description: String
    }

    /// Shakes hands with `host` on `descriptor` (blocking; the socket's timeouts apply).
    init(descriptor: Int32, host: String) throws(Failure) {
        let ssl: LibSSL
        switch LibSSL.loaded {
        case .success(let loaded): ssl = loaded
        case .failure(let error): throw Failure(isUntrustedCertificate: false, description: error.description)
        }
        self.ssl = ssl
        guard let context = ssl.newContext(ssl.clientMethod()) else {
            throw Failure(isUntrustedCertificate: false, description: "SSL_CTX_new failed")
        }
        ssl.setVerify(context, SSL_VERIFY_PEER, nil)
        _ = ssl.useDefaultVerifyPaths(context)
        if let extra = ProcessEnvironment.nonEmpty("MUSICKIT_CA_FILE"),
           ssl.loadVerifyLocations(context, extra, nil) != 1 {
            ssl.freeContext(context)
            throw Failure(isUntrustedCertificate: false, description: "MUSICKIT_CA_FILE: \(extra) holds no certificate OpenSSL can read")
        }
        guard let connection = ssl.newConnection(context) else {
            ssl.freeContext(context)
            throw Failure(isUntrustedCertificate: false, description: "SSL_new failed")
        }
        self.context = context
        self.connection = connection
        _ = ssl.setDescriptor(connection, descriptor)
        _ = host.withCString { ssl.control(connection, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) }
        _ = ssl.setHost(connection, host)
        let result = ssl.connect(connection)
        if result != 1 {
            let verification = ssl.verifyResult(connection)
            if verification != 0 {  // X509_V_OK
                throw Failure(isUntrustedCertificate: true, description: "the certificate of \(host) is not trusted: "
                              + String(cString: ssl.verifyErrorText(verification)))
            }
            throw Failure(isUntrustedCertificate: false, description: "TLS handshake with \(host) failed (\(ssl.errorText(connection, result)))")
        }
    }

    deinit {
        _ = ssl.shutdown(connection)
        ssl.freeConnection(connection)
        ssl.freeContext(context)
    }

    /// Reads up to `count` bytes; 0 at the end of the stream.
    func read(_ buffer: UnsafeMutableRawPointer, _ count: Int) throws(Failure) -> Int {
        let result = ssl.read(connection, buffer, Int32(min(count, Int(Int32.max))))
        if result > 0 { return Int(result) }
        let code = ssl.errorCode(connection, result)
        if code == SSL_ERROR_ZERO_RETURN { return 0 }
        if code == SSL_ERROR_SYSCALL && errno == 0 { return 0 }  // the peer closed without close_notify
        throw Failure(isUntrustedCertificate: false, description: "TLS read: \(ssl.errorText(connection, result))")
    }

    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let result = ssl.write(connection, bytes.baseAddress! + offset, Int32(min(bytes.count - offset, Int(Int32.max))))
            guard result > 0 else {
                throw Failure(isUntrustedCertificate: false, description: "TLS write: \(ssl.errorText(connection, result))")
            }
            offset += Int(result)
        }
    }
}

/// The libssl functions TLSConnection calls, from libssl.so.3 opened at the first connection.
private struct LibSSL: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    let clientMethod: @convention(c) () -> OpaquePointer?
    let newContext: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let freeContext: @convention(c) (OpaquePointer?) -> Void
    let setVerify: @convention(c) (OpaquePointer?, Int32, (@convention(c) (Int32, OpaquePointer?) -> Int32)?) -> Void
    let useDefaultVerifyPaths: @convention(c) (OpaquePointer?) -> Int32
    let loadVerifyLocations: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    let newConnection: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let freeConnection: @convention(c) (OpaquePointer?) -> Void
    let setDescriptor: @convention(c) (OpaquePointer?, Int32) -> Int32
    let control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    let setHost: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    let connect: @convention(c) (OpaquePointer?) -> Int32
    let read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    let write: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    let shutdown: @convention(c) (OpaquePointer?) -> Int32
    let errorCode: @convention(c) (OpaquePointer?, Int32) -> Int32
    let verifyResult: @convention(c) (OpaquePointer?) -> Int
    let verifyErrorText: @convention(c) (Int) -> UnsafePointer<CChar>
    let lastErrorCode: @convention(c) () -> UInt
    let errorString: @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void

    // X509_verify_cert_error_string and the ERR_ functions are libcrypto's, found through libssl,
    // which loads it.
    static let loaded: Result<LibSSL, DynamicLibrary.Failure> =
        DynamicLibrary.table("libssl.so.3") { function throws(DynamicLibrary.Failure) in
            LibSSL(
                clientMethod: try function("TLS_client_method"), newContext: try function("SSL_CTX_new"),
                freeContext: try function("SSL_CTX_free"), setVerify: try function("SSL_CTX_set_verify"),
                useDefaultVerifyPaths: try function("SSL_CTX_set_default_verify_paths"),
                loadVerifyLocations: try function("SSL_CTX_load_verify_locations"),
                newConnection: try function("SSL_new"), freeConnection: try function("SSL_free"),
                setDescriptor: try function("SSL_set_fd"), control: try function("SSL_ctrl"),
                setHost: try function("SSL_set1_host"), connect: try function("SSL_connect"),
                read: try function("SSL_read"), write: try function("SSL_write"), shutdown: try function("SSL_shutdown"),
                errorCode: try function("SSL_get_error"), verifyResult: try function("SSL_get_verify_result"),
                verifyErrorText: try function("X509_verify_cert_error_string"),
                lastErrorCode: try function("ERR_get_error"), errorString: try function("ERR_error_string_n"))
        }

    /// What went wrong with the call that returned `result`, as text.
    func errorText(_ connection: OpaquePointer, _ result: Int32) -> String {
        let code = errorCode(connection, result)
        let queued = lastErrorCode()
        if queued != 0 {
            var text = [CChar](repeating: 0, count: 256)
            errorString(queued, &text, text.count)
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return code == SSL_ERROR_SYSCALL ? "connection closed (\(String(cString: strerror(errno))))" : "SSL error \(code)"
    }
}
