/** A figure of the overview: a label, a value, and where it leads. */

/** Props: the label, the value, a test id, a tone, and a link. */
export interface TileProps {
  label: string;
  value: string | number;
  id: string;
  tone?: "warn" | "bad";
  /** The page that lists what the figure counts. */
  href?: string;
}

/** One tile; with `href`, its label is a link to the list behind it. */
export function Tile(props: TileProps) {
  return (
    <li class="tile">
      <span class="tile-label">
        {props.href ? <a href={props.href}>{props.label}</a> : props.label}
      </span>
      <span
        class={props.tone ? `tile-value tone-${props.tone}` : "tile-value"}
        data-testid={`stat-${props.id}`}
      >
        {props.value}
      </span>
    </li>
  );
}
