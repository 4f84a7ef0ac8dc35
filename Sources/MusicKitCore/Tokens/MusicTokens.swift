import Foundation
import Synchronization

// The Apple Music API's tokens, with Apple's types. On Apple platforms the system provides both:
// the developer token from the app's registration, the user token from the signed-in Apple ID.
// Here the developer brings them: DefaultMusicTokenProvider signs its own developer token (ES256,
// with the `.p8` key from developer.apple.com) or uses a ready one, and reads a user token from
// the environment or the same settings file. See MusicDeveloperTokenSettings for the settings.

/// Options for a token request.
public struct MusicTokenRequestOptions: OptionSet, Sendable, Hashable {
    public typealias Element = MusicTokenRequestOptions
    public typealias ArrayLiteralElement = MusicTokenRequestOptions

    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Make a new token even if a cached one is still valid.
    public static let ignoreCache = MusicTokenRequestOptions(rawValue: 1 << 0)
}

/// Why a token could not be had.
public enum MusicTokenRequestError: String, Error, LocalizedError, CustomStringConvertible, Sendable, Hashable {
    case unknown
    case permissionDenied
    case privacyAcknowledgementRequired
    case userNotSignedIn
    case userTokenRevoked
    case userTokenRequestFailed
    case developerTokenRequestFailed

    public var description: String {
        switch self {
        case .unknown: "MusicTokenRequestError.unknown"
        case .permissionDenied: "MusicTokenRequestError.permissionDenied"
        case .privacyAcknowledgementRequired: "MusicTokenRequestError.privacyAcknowledgementRequired"
        case .userNotSignedIn: "MusicTokenRequestError.userNotSignedIn"
        case .userTokenRevoked: "MusicTokenRequestError.userTokenRevoked"
        case .userTokenRequestFailed: "MusicTokenRequestError.userTokenRequestFailed"
        case .developerTokenRequestFailed: "MusicTokenRequestError.developerTokenRequestFailed"
        }
    }

    public var errorDescription: String? {
        switch self {
        case .unknown: "An unknown error occurred while requesting a music token."
        case .permissionDenied: "The person has not allowed this app to access their music."
        case .privacyAcknowledgementRequired: "The person must acknowledge the Apple Music privacy policy first."
        case .userNotSignedIn: "No music user token is set."
        case .userTokenRevoked: "The music user token was revoked."
        case .userTokenRequestFailed: "The music user token could not be obtained."
        case .developerTokenRequestFailed: "The developer token could not be obtained."
        }
    }

    public var failureReason: String? { errorDescription }

    public var recoverySuggestion: String? {
        switch self {
        case .userNotSignedIn, .userTokenRevoked, .userTokenRequestFailed:
            "Set MUSICKIT_USER_TOKEN (or \"userToken\" in the developer token settings file) to a music user token."
        case .developerTokenRequestFailed:
            "Set MUSICKIT_DEVELOPER_TOKEN, or MUSICKIT_DEVELOPER_KEY_FILE, MUSICKIT_KEY_ID and MUSICKIT_TEAM_ID."
        case .permissionDenied: "Allow the app with `musickit authorize`."
        case .privacyAcknowledgementRequired, .unknown: nil
        }
    }

    public var helpAnchor: String? { nil }
}

/// Something that provides developer tokens for the Apple Music API.
public protocol MusicDeveloperTokenProvider: Sendable {
    func developerToken(options: MusicTokenRequestOptions) async throws -> String
}

/// Provides music user tokens (the person's, for `/v1/me` requests). Open, as Apple's is: an
/// app that gets the person's token its own way subclasses it and overrides
/// `userToken(for:options:)`, then sets a provider of both tokens as
/// `MusicDataRequest.tokenProvider`.
///
/// On Linux the token is the one in `MUSICKIT_USER_TOKEN`, or `"userToken"` in the developer
/// token settings file; without one, `MusicTokenRequestError.userNotSignedIn`.
open class MusicUserTokenProvider: @unchecked Sendable {
    // @unchecked: no stored state; subclasses keep theirs thread-safe.
    public init() {}

    open func userToken(for developerToken: String, options: MusicTokenRequestOptions) async throws -> String {
        if let token = try MusicDeveloperTokenSettings.current().userToken { return token }
        throw MusicTokenRequestError.userNotSignedIn
    }
}

/// A provider of both tokens.
public typealias MusicTokenProvider = MusicUserTokenProvider & MusicDeveloperTokenProvider

/// The provider `MusicDataRequest` uses unless told otherwise: the developer token from the
/// settings (`MUSICKIT_DEVELOPER_TOKEN`, or signed here with the developer's key), kept until
/// shortly before it expires; the user token as `MusicUserTokenProvider`.
public final class DefaultMusicTokenProvider: MusicUserTokenProvider, MusicDeveloperTokenProvider, @unchecked Sendable {
    // @unchecked: the cache is in a Mutex.
    private let cache = Mutex<(token: String, renewAt: Date)?>(nil)

    override public init() {
        super.init()
    }

    /// A developer token: the ready one in the settings, or one signed now with the settings'
    /// key (ES256; valid for 12 hours; the same one is returned until 10 minutes before it
    /// expires, unless `options` has `.ignoreCache`). Throws `MusicDeveloperTokenError` naming
    /// the setting that is missing or wrong.
    public func developerToken(options: MusicTokenRequestOptions) async throws -> String {
        let now = Date()
        if !options.contains(.ignoreCache), let cached = cache.withLock({ $0 }), cached.renewAt > now {
            return cached.token
        }
        let settings = try MusicDeveloperTokenSettings.current()
        let token: String
        let expires: Date
        switch try settings.source {
        case .ready(let ready):
            token = ready
            expires = DeveloperToken.expiry(of: ready) ?? now.addingTimeInterval(DeveloperToken.lifetime)
        case .signing(let signing):
            expires = now.addingTimeInterval(DeveloperToken.lifetime)
            token = try DeveloperToken.sign(signing, issuedAt: now, expiresAt: expires)
        }
        cache.withLock { $0 = (token, expires.addingTimeInterval(-DeveloperToken.renewalMargin)) }
        return token
    }
}

/// A developer token that cannot be made: the setting that is missing or wrong, and why.
/// (Linux addition)
public struct MusicDeveloperTokenError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The environment variable or settings-file field at fault.
    public let setting: String
    public let reason: String

    public var description: String { "\(setting): \(reason)" }
}
