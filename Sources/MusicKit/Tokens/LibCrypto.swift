import AudioEngine
import COpenSSL
import Foundation

// The wrapper of OpenSSL's libcrypto (the only file that imports COpenSSL): ES256 signatures
// (ECDSA on P-256 with SHA-256) with a PEM private key, as Apple's developer tokens need.
// libcrypto.so.3 is opened at the first signature (see DynamicLibrary).

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

    private static let loaded: Result<LibCrypto, ES256PrivateKey.Failure> = {
        do throws(DynamicLibrary.Failure) {
            let library = try DynamicLibrary("libcrypto.so.3")
            func function<T>(_ name: String) throws(DynamicLibrary.Failure) -> T { try library.function(name) }
            return .success(LibCrypto(
                newMemoryBuffer: try function("BIO_new_mem_buf"), freeBuffer: try function("BIO_free"),
                readPrivateKey: try function("PEM_read_bio_PrivateKey"), baseID: try function("EVP_PKEY_get_base_id"),
                bits: try function("EVP_PKEY_get_bits"), groupName: try function("EVP_PKEY_get_group_name"),
                freeKey: try function("EVP_PKEY_free"), newDigestContext: try function("EVP_MD_CTX_new"),
                freeDigestContext: try function("EVP_MD_CTX_free"), sha256: try function("EVP_sha256"),
                digestSignInit: try function("EVP_DigestSignInit"), digestSign: try function("EVP_DigestSign"),
                decodeSignature: try function("d2i_ECDSA_SIG"), signatureR: try function("ECDSA_SIG_get0_r"),
                signatureS: try function("ECDSA_SIG_get0_s"), freeSignature: try function("ECDSA_SIG_free"),
                bignumToPaddedBytes: try function("BN_bn2binpad"), errorCode: try function("ERR_get_error"),
                errorString: try function("ERR_error_string_n")))
        } catch {
            return .failure(ES256PrivateKey.Failure(description: error.description))
        }
    }()

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
