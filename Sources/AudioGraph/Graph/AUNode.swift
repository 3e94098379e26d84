// Graph: node numbers, connections and interactions (AUNode, AUNodeConnection, AUNodeInteraction).

/// A node in an ``AudioGraph``. Mirrors `AUNode`: a small integer, unique within its graph,
/// never reused after removal.
public struct AUNode: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The node number, counted from 1.
    public let rawValue: Int32
    /// Wraps a node number.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Orders by node number.
    public static func < (a: AUNode, b: AUNode) -> Bool { a.rawValue < b.rawValue }
    /// For example `node 3`.
    public var description: String { "node \(rawValue)" }
}

/// One connection: (source node, output element) → (destination node, input element).
/// Mirrors `AUNodeConnection`.
public struct AUNodeConnection: Hashable, Sendable, CustomStringConvertible {
    /// The node whose output feeds the destination.
    public let sourceNode: AUNode
    /// Output element of `sourceNode`.
    public let sourceOutputElement: AudioUnitElement
    /// The node being fed.
    public let destinationNode: AUNode
    /// Input element of `destinationNode`.
    public let destinationInputElement: AudioUnitElement
    /// For example `node 1:1 → node 2:0`.
    public var description: String {
        "\(sourceNode):\(sourceOutputElement) → \(destinationNode):\(destinationInputElement)"
    }
    /// Describes a connection (to compare with ``AudioGraph/connections``).
    public init(sourceNode: AUNode, sourceOutputElement: AudioUnitElement,
                destinationNode: AUNode, destinationInputElement: AudioUnitElement) {
        self.sourceNode = sourceNode
        self.sourceOutputElement = sourceOutputElement
        self.destinationNode = destinationNode
        self.destinationInputElement = destinationInputElement
    }
}

/// One interaction of a node: a connection or an input callback. Mirrors `AUNodeInteraction`
/// (`kAUNodeInteraction_Connection` / `kAUNodeInteraction_InputCallback`).
public enum AUNodeInteraction: Hashable, Sendable, CustomStringConvertible {
    /// A connection between two nodes.
    case connection(AUNodeConnection)
    /// A render callback feeding an input element.
    case inputCallback(destinationNode: AUNode, destinationInputElement: AudioUnitElement)

    /// For example `node 1:1 → node 2:0` or `render callback → node 2:1`.
    public var description: String {
        switch self {
        case .connection(let c): return c.description
        case .inputCallback(let node, let element): return "render callback → \(node):\(element)"
        }
    }
}
