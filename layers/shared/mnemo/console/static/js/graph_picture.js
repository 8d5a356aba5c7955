// The memory graph as a picture: the entity in the middle, its neighbours around it, each current fact an
// arrow labelled with its predicate. Every node is a link to that entity's own neighbourhood.

import { svg } from "./dom.js";

const WIDTH = 720;
const HEIGHT = 420;
const RADIUS = 160;

function radius(node) {
  return node.centre ? 34 : 26;
}

function shortened(text, most = 22) {
  return text.length > most ? `${text.slice(0, most - 1)}…` : text;
}

/** The SVG for ``entity`` and ``facts`` (only those to draw), with ``neighbours`` placed on a circle. */
export function graphPicture(entity, facts, neighbours, linkTo) {
  const nodes = new Map([[entity.entityId, { id: entity.entityId, name: entity.name, type: entity.type, x: WIDTH / 2, y: HEIGHT / 2, centre: true }]]);
  const others = [];
  const remember = (id, name, type) => {
    if (!nodes.has(id)) {
      const node = { id, name, type: type || "" };
      nodes.set(id, node);
      others.push(node);
    }
  };
  for (const neighbour of neighbours) remember(neighbour.entityId, neighbour.name, neighbour.type);
  for (const fact of facts) {
    remember(fact.subjectId, fact.subject);
    remember(fact.objectId, fact.object);
  }
  others.forEach((node, index) => {
    // From the right, going round: two neighbours sit either side, where the labels have room.
    const angle = (2 * Math.PI * index) / Math.max(others.length, 1);
    node.x = WIDTH / 2 + RADIUS * 1.6 * Math.cos(angle);
    node.y = HEIGHT / 2 + RADIUS * Math.sin(angle);
  });

  const pairCount = new Map();
  const edges = facts.map((fact) => {
    const from = nodes.get(fact.subjectId);
    const to = nodes.get(fact.objectId);
    const pair = [fact.subjectId, fact.objectId].sort().join(" ");
    const nth = pairCount.get(pair) || 0;
    pairCount.set(pair, nth + 1);
    const labelX = (from.x + to.x) / 2;
    const labelY = (from.y + to.y) / 2 - 6 + nth * 16;
    // The line runs from circle edge to circle edge, so that the arrow head shows.
    const length = Math.hypot(to.x - from.x, to.y - from.y) || 1;
    const [dx, dy] = [(to.x - from.x) / length, (to.y - from.y) / length];
    const [start, end] = [radius(from) + 2, radius(to) + 4];
    return svg("g", { class: "edge", "data-fact-id": fact.factId },
      svg("title", { text: fact.text }),
      svg("line", {
        x1: from.x + dx * start, y1: from.y + dy * start, x2: to.x - dx * end, y2: to.y - dy * end, "marker-end": "url(#arrow)",
      }),
      svg("text", { x: labelX, y: labelY, "text-anchor": "middle", class: "edge-label", text: fact.predicate }));
  });

  const drawn = [...nodes.values()].map((node) => {
    const label = `${node.name}${node.type ? ` (${node.type})` : ""}`;
    const shape = svg("g", { class: node.centre ? "node centre" : "node", "data-entity-id": node.id },
      svg("circle", { cx: node.x, cy: node.y, r: radius(node) }),
      svg("text", { x: node.x, y: node.y + radius(node) + 16, "text-anchor": "middle", text: shortened(node.name) }));
    if (node.centre) return shape;
    return svg("a", { href: linkTo(node), "aria-label": `Open ${label}`, class: "node-link" }, shape);
  });

  return svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "graph", role: "group",
    "aria-label": `${entity.name} and its neighbours: ${facts.length} ${facts.length === 1 ? "fact" : "facts"} shown`,
  },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }))),
  edges, drawn);
}
