import Foundation
import Synchronization

/// The person's Apple Music subscription, as the account says.
public struct MusicSubscription: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Catalog content plays (an active subscription).
    public let canPlayCatalogContent: Bool
    /// The person could subscribe (not subscribed now): show them the offer.
    public let canBecomeSubscriber: Bool
    /// iCloud Music Library is on.
    public let hasCloudLibraryEnabled: Bool

    package init(account: MusicAccountSettings) {
        canPlayCatalogContent = account.isSubscribed
        canBecomeSubscriber = !account.isSubscribed
        hasCloudLibraryEnabled = account.hasCloudLibraryEnabled
    }

    public var description: String {
        "MusicSubscription(canPlayCatalogContent: \(canPlayCatalogContent), canBecomeSubscriber: \(canBecomeSubscriber), hasCloudLibraryEnabled: \(hasCloudLibraryEnabled))"
    }

    public enum Error: String, Swift.Error, Equatable, Hashable, Sendable, CustomStringConvertible, LocalizedError {
        case permissionDenied
        case privacyAcknowledgementRequired
        case unknown

        public var description: String { errorDescription ?? rawValue }
        public var errorDescription: String? {
            switch self {
            case .permissionDenied: "This app is not authorized to access Apple Music."
            case .privacyAcknowledgementRequired: "The Apple Music privacy notice has not been acknowledged."
            case .unknown: "The subscription status could not be read."
            }
        }
        public var failureReason: String? { self == .permissionDenied ? "MusicAuthorization.currentStatus is not .authorized" : nil }
        public var recoverySuggestion: String? {
            self == .permissionDenied ? "Call MusicAuthorization.request(), or run `musickit authorize APP --allow`." : nil
        }
        public var helpAnchor: String? { nil }
    }

    /// The current subscription. Throws `.permissionDenied` unless the app is authorized.
    public static var current: MusicSubscription {
        get async throws { try read(from: .current) }
    }

    /// What `current` is in `environment`, read now.
    static func read(from environment: MusicKitEnvironment) throws(Error) -> MusicSubscription {
        guard MusicAuthorization.status(in: environment) == .authorized else { throw .permissionDenied }
        let (account, problem) = AccountStore.load(environment)
        if let problem, problem.keptAt == nil { throw .unknown }
        return MusicSubscription(account: account)
    }

    /// Every change of the subscription, also when another process changed the account:
    /// the current value first, then one value per change.
    public static var subscriptionUpdates: MusicSubscription.Updates { Updates(environment: .current) }

    /// An endless sequence of subscription states.
    public struct Updates: AsyncSequence, Sendable {
        public typealias Element = MusicSubscription
        public typealias AsyncIterator = Iterator
        let environment: MusicKitEnvironment

        public func makeAsyncIterator() -> Iterator { Iterator(environment: environment) }

        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = MusicSubscription
            let environment: MusicKitEnvironment
            var last: MusicSubscription?

            init(environment: MusicKitEnvironment) { self.environment = environment }

            /// Waits for the account file to change (polled every 100 ms; another process's
            /// write shows up within that), then yields the subscription if it changed.
            public mutating func next() async -> MusicSubscription? {
                while !Task.isCancelled {
                    let subscription = MusicSubscription(account: AccountStore.load(environment).account)
                    if subscription != last {
                        last = subscription
                        return subscription
                    }
                    try? await Task.sleep(nanoseconds: 100_000_000)
                }
                return nil
            }
        }
    }
}

/// The offer to subscribe to Apple Music, presented from an app.
public struct MusicSubscriptionOffer: Sendable {
    /// What the offer does.
    public struct Action: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
        public typealias RawValue = String
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public static let subscribe = Action("subscribe")
        public var description: String { rawValue }
    }

    /// Which message the offer shows.
    public struct MessageIdentifier: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
        public typealias RawValue = String
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public static let join = MessageIdentifier("join")
        public static let playMusic = MessageIdentifier("playMusic")
        public static let addMusic = MessageIdentifier("addMusic")
        public var description: String { rawValue }
    }

    /// How the offer is presented.
    public struct Options: Equatable, Hashable, Sendable, CustomStringConvertible {
        public var action: MusicSubscriptionOffer.Action
        public var messageIdentifier: MusicSubscriptionOffer.MessageIdentifier
        /// The item the offer is about (shown in the message).
        public var itemID: MusicItemID?
        /// Apple Services Performance Partner Program token.
        public var affiliateToken: String?
        public var campaignToken: String?

        public init(action: MusicSubscriptionOffer.Action = .subscribe,
                    messageIdentifier: MusicSubscriptionOffer.MessageIdentifier = .join,
                    itemID: MusicItemID? = nil, affiliateToken: String? = nil, campaignToken: String? = nil) {
            self.action = action
            self.messageIdentifier = messageIdentifier
            self.itemID = itemID
            self.affiliateToken = affiliateToken
            self.campaignToken = campaignToken
        }

        public static let `default` = Options()

        public var description: String {
            "MusicSubscriptionOffer.Options(action: \(action), messageIdentifier: \(messageIdentifier)"
                + (itemID.map { ", itemID: \($0)" } ?? "") + ")"
        }
    }
}
