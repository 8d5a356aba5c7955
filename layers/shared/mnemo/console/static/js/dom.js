// Building the page from data without innerHTML: every text a tool answers is put in as text, never as markup.

export function h(tag, attributes = {}, ...children) {
  const element = attributes.svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false || name === "svg") continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "text") element.textContent = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** An SVG element (the graph picture), built as h builds HTML ones. */
export function svg(tag, attributes = {}, ...children) {
  return h(tag, { ...attributes, svg: true }, ...children);
}

/** Append children as h does: nested lists flattened, null, undefined and false left out, text as text. */
export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

let uniqueCounter = 0;
/** An id no other element of the page has, to tie a label to its control. */
export function uid(prefix) {
  uniqueCounter += 1;
  return `${prefix}-${uniqueCounter}`;
}
